// Package tenancytest starts a real redis-server for tests.
package tenancytest

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// StartRedis starts /usr/bin/redis-server (or the one on PATH) on a free
// 127.0.0.1 port, without persistence, stopped at the end of the test,
// and returns its address. The test is skipped when there is none.
func StartRedis(tb testing.TB) string {
	tb.Helper()
	bin := "/usr/bin/redis-server"
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("redis-server"); err != nil {
			tb.Skip("no redis-server")
		}
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", tb.TempDir())
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for range 200 {
		if c, err := net.DialTimeout("tcp4", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(25 * time.Millisecond)
	}
	tb.Fatalf("redis-server did not listen on %s", addr)
	return ""
}
