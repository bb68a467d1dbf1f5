//go:build linux

package upstream

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/switchyard/switchyard/deadline"
)

// TestTrackedConnFoundThroughTLS proves the walk can reach the raw
// connection from a TLS connection's LocalAddr (what fasthttp records in a
// Response), and that lifting the deadline there reaches the socket.
func TestTrackedConnFoundThroughTLS(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	tc := newTrackedConn(c1, nil)
	tlsConn := tls.Client(tc, &tls.Config{ServerName: "x"})
	a, ok := tlsConn.LocalAddr().(*trackedAddr)
	if !ok || a.conn != tc {
		t.Fatalf("LocalAddr through TLS is %T", tlsConn.LocalAddr())
	}
	if err := tc.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if !setStreamDeadline(tlsConn.LocalAddr(), time.Now().Add(time.Minute)) {
		t.Fatal("setStreamDeadline failed")
	}
	done := make(chan error, 1)
	go func() { _, err := c1.Read(make([]byte, 1)); done <- err }()
	c2.Write([]byte("x")) //nolint:errcheck
	if err := <-done; err != nil {
		t.Fatalf("read after lifting the deadline: %v", err)
	}
	if setStreamDeadline(c2.LocalAddr(), time.Time{}) {
		t.Fatal("setStreamDeadline accepted a foreign address")
	}
}

// TestTrackedConnStale: a reused connection is checked at its request's
// first write: one idle past maxIdleConnDuration, one with bytes waiting
// and one the peer closed are refused with errStaleConn and counted;
// nothing reaches the peer. A fresh connection is never checked.
func TestTrackedConnStale(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pair := func() (*trackedConn, net.Conn, *connStats) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		st := &connStats{}
		return newTrackedConn(c, st), s, st
	}
	start := func(tc *trackedConn) { _ = tc.RemoteAddr() } // what fasthttp's RoundTrip does

	// Fresh, then reused with nothing waiting: written.
	tc, srv, st := pair()
	defer tc.Close()
	defer srv.Close()
	start(tc)
	if _, err := tc.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	start(tc)
	if _, err := tc.Write([]byte("b")); err != nil {
		t.Fatalf("a healthy reused connection refused: %v", err)
	}
	// Reused after too long idle.
	tc.lastRead = deadline.Mono() - int64(maxIdleConnDuration)
	start(tc)
	if _, err := tc.Write([]byte("c")); err != errStaleConn || st.discards[discardExpired].Load() != 1 {
		t.Fatalf("expired: %v, %d", err, st.discards[discardExpired].Load())
	}
	tc.lastRead = 0
	// Unsolicited bytes waiting.
	srv.Write([]byte("HTTP/1.1 200 OK\r\n")) //nolint:errcheck
	waitPeek(t, tc, peekData)
	start(tc)
	if _, err := tc.Write([]byte("d")); err != errStaleConn || st.discards[discardUnsolicited].Load() != 1 {
		t.Fatalf("unsolicited: %v", err)
	}
	// Peer closed.
	tc2, srv2, st2 := pair()
	defer tc2.Close()
	start(tc2)
	srv2.Close()
	waitPeek(t, tc2, peekClosed)
	start(tc2)
	if _, err := tc2.Write([]byte("e")); err != errStaleConn || st2.discards[discardClosed].Load() != 1 {
		t.Fatalf("closed: %v", err)
	}
	// The peer saw only the writes that were allowed.
	_ = srv.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	got, _ := io.ReadAll(srv)
	if string(got) != "ab" {
		t.Fatalf("peer received %q, want \"ab\"", got)
	}
}

// waitPeek waits (bounded) until a peek at tc finds want.
func waitPeek(t *testing.T, tc *trackedConn, want peekState) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if tc.peek.state() == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("peek never found %d", want)
}
