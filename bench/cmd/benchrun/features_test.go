package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
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

// The audit row takes the private key from `switchyard audit keygen`'s
// output, not the public one or a comment.
func TestAuditKeyFromKeygen(t *testing.T) {
	dir := t.TempDir()
	bin := dir + "/switchyard"
	out := "# The private key signs the checkpoints: keep it secret (audit.signing_key: ${AUDIT_SIGNING_KEY}).\nAUDIT_SIGNING_KEY=cHJpdmF0ZQ==\n# The public key is for auditors\nAUDIT_PUBLIC_KEY=cHVibGlj\n"
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nprintf '"+strings.ReplaceAll(out, "\n", "\\n")+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := &bench{ctx: context.Background(), syBin: bin}
	if k, err := b.auditKey(); err != nil || k != "cHJpdmF0ZQ==" {
		t.Fatalf("key %q, %v", k, err)
	}
}
