package upstream

import (
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// TestTrackedConnFoundThroughTLS proves the walk can reach the raw
// connection from a TLS connection's LocalAddr (what fasthttp records in a
// Response), and that lifting the deadline there reaches the socket.
func TestTrackedConnFoundThroughTLS(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	tc := newTrackedConn(c1)
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
