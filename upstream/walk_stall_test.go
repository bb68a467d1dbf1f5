package upstream

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/switchyard/switchyard/config"
)

// A client that sends a stream request and then never reads (as a stalled
// peer with a zero TCP window does) must not hold the upstream connection
// and the limiter slot for ever: once a frame cannot leave for the
// target's timeout, the stream ends as for a disconnect.
func TestStreamStalledClientReleasesSlot(t *testing.T) {
	h := newHarness(t)
	events := make([]string, 0, 4001)
	ev := "data: {\"c\":\"" + strings.Repeat("x", 1000) + "\"}\n\n"
	for i := 0; i < 4000; i++ {
		events = append(events, ev)
	}
	h.mock("a", sse(0, append(events, done)...))
	ta := h.target("a", func(ct *config.Target) { ct.Timeout = 300 * time.Millisecond })
	obs := newRec()

	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{
		Handler: func(rc *fasthttp.RequestCtx) {
			walkWith(rc, chatCall(true), []*Target{ta}, time.Now().Add(5*time.Second), obs, h.clk)
		},
		Logger: quietLogger{},
	}
	go srv.Serve(ln)                     //nolint:errcheck
	t.Cleanup(func() { srv.Shutdown() }) //nolint:errcheck
	c, err := ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := chatBody
	if _, err := c.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: " +
		itoa(len(body)) + "\r\n\r\n" + body)); err != nil {
		t.Fatal(err)
	}
	// Never read from c.
	select {
	case end := <-obs.ends:
		if end.Class != ClassCanceled {
			t.Fatalf("stream ended %v, want canceled", end.Class)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the stream to a client that does not read never ended; %d slot(s) held", ta.Limiter().InFlight())
	}
	if n := ta.Limiter().InFlight(); n != 0 {
		t.Fatalf("%d slot(s) still held", n)
	}
}

// The stall deadline a stream leaves behind does not cut the next answer
// on the same keep-alive connection short, after a pause longer than the
// stall limit: the server arms a fresh deadline per response
// (WriteTimeout, as hotpath's server does).
func TestStreamStallDeadlineClearedForKeepAlive(t *testing.T) {
	h := newHarness(t)
	h.mock("a", sse(0, ev1, ev2, done))
	ta := h.target("a", func(ct *config.Target) { ct.Timeout = 100 * time.Millisecond })
	// Real TCP: a write past an expired deadline fails deterministically.
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{
		Handler: func(rc *fasthttp.RequestCtx) {
			// The first request streams; the second does not, so nothing
			// of its own sets a write deadline on the connection.
			stream := string(rc.Path()) == "/stream"
			walkWith(rc, chatCall(stream), []*Target{ta}, time.Now().Add(5*time.Second), nil, h.clk)
		},
		Logger:       quietLogger{},
		WriteTimeout: 2 * time.Second,
	}
	go srv.Serve(ln)                     //nolint:errcheck
	t.Cleanup(func() { srv.Shutdown() }) //nolint:errcheck
	dials := 0
	addr := ln.Addr().String()
	cl := &fasthttp.HostClient{Addr: addr, MaxConns: 1, Dial: func(a string) (net.Conn, error) { dials++; return net.Dial("tcp4", a) }}
	for i := 0; i < 2; i++ {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.Header.SetMethod("POST")
		path := "/stream"
		if i > 0 {
			path = "/plain"
		}
		req.SetRequestURI("http://" + addr + path)
		req.SetBodyString(chatBody)
		if err := cl.Do(req, resp); err != nil || resp.StatusCode() != 200 || string(resp.Body()) != ev1+ev2+done {
			t.Fatalf("request %d: %v %d %q", i, err, resp.StatusCode(), resp.Body())
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
		time.Sleep(300 * time.Millisecond) // past the stall limit
	}
	if dials != 1 {
		t.Fatalf("%d connections, want one reused", dials)
	}
}

// A client that stops reading near the end of a stream, when the upstream
// has already sent everything, must not hold the connection while fasthttp
// writes the rest: the writer's last deadline bounds that final write too.
// The client here reads nothing for 2 s, then everything it can: it must
// not find [DONE] (which it did when the deadline was lifted at the end).
func TestStreamStalledClientAtTheEndIsCutOff(t *testing.T) {
	h := newHarness(t)
	big := "data: {\"c\":\"" + strings.Repeat("x", 7<<20) + "\"}\n\n"
	h.mock("a", sse(0, big, big, big, big, done))
	ta := h.target("a", func(ct *config.Target) { ct.Timeout = 300 * time.Millisecond })
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{
		Handler: func(rc *fasthttp.RequestCtx) {
			walkWith(rc, chatCall(true), []*Target{ta}, time.Now().Add(5*time.Second), nil, h.clk)
		},
		Logger:       quietLogger{},
		WriteTimeout: time.Minute,
	}
	go srv.Serve(ln)                     //nolint:errcheck
	t.Cleanup(func() { srv.Shutdown() }) //nolint:errcheck
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: " +
		itoa(len(chatBody)) + "\r\n\r\n" + chatBody)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got strings.Builder
	buf := make([]byte, 1<<20)
	for {
		n, err := c.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if strings.Contains(got.String(), "[DONE]") {
		t.Fatalf("the client that stopped reading got all %d bytes and [DONE] 2 s later: the server kept writing", got.Len())
	}
}
