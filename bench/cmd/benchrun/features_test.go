package main

import (
	"context"
	"net"
	"os/exec"
	"testing"
	"time"
)

// The Redis row's counter: a redis-server started the way the row starts
// it answers INFO commandstats, and the calls of a command sent to it show.
func TestRedisCommandStats(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server on PATH")
	}
	b := &bench{ctx: context.Background()}
	r, err := b.startRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	c, err := net.Dial("tcp", r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("SET k v\r\nSET k w\r\nGET k\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for got := ""; len(got) < len("+OK\r\n+OK\r\n$1\r\nw\r\n"); {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got += string(buf[:n])
	}
	stats, err := redisCommandStats(r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if stats["set"] != 2 || stats["get"] != 1 {
		t.Fatalf("commandstats %v, want set=2 get=1", stats)
	}
}
