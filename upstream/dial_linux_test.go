//go:build linux

package upstream

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestDialShallowConnects: dialShallow makes a working TCP connection to an
// IPv4 and (where the host has it) an IPv6 literal, with the addresses set.
func TestDialShallowConnects(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		ln, err := net.Listen(network, map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network])
		if err != nil {
			if network == "tcp6" {
				t.Logf("no IPv6 loopback: %v", err)
				continue
			}
			t.Fatal(err)
		}
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			io.Copy(c, c) //nolint:errcheck // echo until the client closes
		}()
		c, err := dialShallow(ln.Addr().String(), time.Second)
		if err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		if got := c.RemoteAddr().String(); got != ln.Addr().String() {
			t.Errorf("%s: RemoteAddr %s, want %s", network, got, ln.Addr())
		}
		if c.LocalAddr() == nil {
			t.Errorf("%s: no LocalAddr", network)
		}
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		c.SetReadDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			t.Errorf("%s: echo %q, %v", network, buf, err)
		}
		c.Close()
		ln.Close()
	}
}

// TestDialShallowFailures: a refused connect is a transport failure (502),
// a connect cut by its timeout is fasthttp.ErrDialTimeout (also 502, as
// fasthttp's dialer reports it), and a host name is left to fasthttp's dialer.
func TestDialShallowFailures(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = dialShallow(addr, time.Second)
	var op *net.OpError
	if !errors.As(err, &op) || errors.Is(err, fasthttp.ErrDialTimeout) || errClass(err) != ClassTransport {
		t.Errorf("refused: %v (%T), class %v; want a *net.OpError, ClassTransport", err, err, errClass(err))
	}
	_, err = dialShallow(addr, -time.Second)
	if !errors.Is(err, fasthttp.ErrDialTimeout) || errClass(err) != ClassTransport {
		t.Errorf("timed out: %v, class %v; want ErrDialTimeout, ClassTransport", err, errClass(err))
	}
	for _, a := range []string{"localhost:80", "example.com:443", "[fe80::1%lo]:80", "127.0.0.1", "::1:80", "127.0.0.1:x", "127.0.0.1:70000", "[127.0.0.1:80"} {
		if _, err := dialShallow(a, time.Second); err != errNotLiteral {
			t.Errorf("%s: %v, want errNotLiteral", a, err)
		}
	}
}

// TestDialTCPNames: a host name is resolved and connected (by fasthttp's dialer, aside).
func TestDialTCPNames(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	c, err := dialTCP("localhost:"+port, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
