package deadline

import (
	"net"
	"testing"
	"time"
)

// BenchmarkSetReadDeadline is a keep-alive request's re-arm of the same
// timeout: lazily, and straight on the TCP connection.
func BenchmarkSetReadDeadline(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			time.Sleep(time.Minute)
		}
	}()
	tc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer tc.Close()
	for _, bc := range []struct {
		name string
		c    net.Conn
	}{{"lazy", &Conn{Conn: tc}}, {"direct", tc}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.c.SetReadDeadline(time.Now().Add(time.Minute)) //nolint:errcheck
			}
		})
		// The server's idle and read timeouts in turn: armed every time.
		b.Run(bc.name+"-alternating", func(b *testing.B) {
			for b.Loop() {
				bc.c.SetReadDeadline(time.Now().Add(2 * time.Minute)) //nolint:errcheck
				bc.c.SetReadDeadline(time.Now().Add(time.Minute))     //nolint:errcheck
			}
		})
	}
}

// BenchmarkNowAdd is the part of BenchmarkSetReadDeadline that is the
// caller's (fasthttp computes now + timeout before every set).
func BenchmarkNowAdd(b *testing.B) {
	var t time.Time
	for b.Loop() {
		t = time.Now().Add(time.Minute)
	}
	_ = t
}
