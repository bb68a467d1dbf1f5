package upstream

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// Each test here pins one behaviour of fasthttp that fasthttp_reliance.go
// lists: an upgrade that changes it fails here first.

// countingConn counts LocalAddr and RemoteAddr calls.
type countingConn struct {
	net.Conn
	local, remote int
}

func (c *countingConn) LocalAddr() net.Addr  { c.local++; return c.Conn.LocalAddr() }
func (c *countingConn) RemoteAddr() net.Addr { c.remote++; return c.Conn.RemoteAddr() }

// TestRelianceParseNetConn: Response.ParseNetConn asks the connection for
// its RemoteAddr exactly once, and Response.LocalAddr then returns what the
// connection's LocalAddr returned (the same value, not a copy).
func TestRelianceParseNetConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	tc := newTrackedConn(a, nil)
	cc := &countingConn{Conn: tc}
	var resp fasthttp.Response
	resp.ParseNetConn(cc)
	if cc.remote != 1 {
		t.Fatalf("ParseNetConn called RemoteAddr %d times, want 1 (reuse detection counts them)", cc.remote)
	}
	if got, ok := resp.LocalAddr().(*trackedAddr); !ok || got.conn != tc {
		t.Fatalf("Response.LocalAddr = %#v, want the trackedConn's own address (trackedOf, setStreamDeadline)", resp.LocalAddr())
	}
}

// TestRelianceOneRemoteAddrPerRequest: through a HostClient with
// connTransport, a keep-alive connection that carries n requests has had
// RemoteAddr called n times (trackedConn.starts), however the requests end.
func TestRelianceOneRemoteAddrPerRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) { rc.SetBodyString("ok") }}
	go srv.Serve(ln)     //nolint:errcheck
	defer srv.Shutdown() //nolint:errcheck
	var dials atomic.Int32
	var last atomic.Pointer[trackedConn]
	hc := &fasthttp.HostClient{
		Addr: ln.Addr().String(),
		Dial: func(addr string) (net.Conn, error) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return nil, err
			}
			dials.Add(1)
			tc := newTrackedConn(c, nil)
			last.Store(tc)
			return tc, nil
		},
		Transport: connTransport{},
	}
	const n = 3
	for i := 0; i < n; i++ {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://" + ln.Addr().String() + "/")
		if err := hc.DoTimeout(req, resp, 5*time.Second); err != nil || string(resp.Body()) != "ok" {
			t.Fatalf("request %d: %v %q", i, err, resp.Body())
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
	if dials.Load() != 1 {
		t.Fatalf("%d dials for %d keep-alive requests, want 1", dials.Load(), n)
	}
	if got := last.Load().starts; got != n {
		t.Fatalf("RemoteAddr called %d times for %d requests, want one per request", got, n)
	}
}

// TestRelianceGiveBack: the handle AcquireConn returns satisfies heldConn,
// and giveBack reaches ReleaseConn's unexported parameter type with it: the
// released connection is the next one handed out.
func TestRelianceGiveBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // until the client closes it
				_, _ = c.Read(make([]byte, 1))
				c.Close()
			}()
		}
	}()
	hc := &fasthttp.HostClient{Addr: ln.Addr().String()}
	cc, err := hc.AcquireConn(time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	var held heldConn = cc
	first := held.Conn()
	giveBack((*fasthttp.HostClient).ReleaseConn, hc, held)
	cc2, err := hc.AcquireConn(time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	if cc2.Conn() != first {
		t.Fatal("the connection given back through giveBack was not pooled")
	}
	giveBack((*fasthttp.HostClient).CloseConn, hc, cc2)
}
