package upstream

import (
	"bufio"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/switchyard/switchyard/config"
)

const (
	ev1  = "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n"
	ev2  = "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n"
	done = "data: [DONE]\n\n"
)

func waitEnd(t *testing.T, obs *recObserver) Result {
	t.Helper()
	select {
	case r := <-obs.ends:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("StreamEnd not reported")
	}
	return Result{}
}

func TestStreamRelayByteExact(t *testing.T) {
	h := newHarness(t)
	h.mock("a", sse(0, ev1, ": keep-alive\n\n", ev2, done))
	ta := h.target("a", nil)
	obs := newRec()
	rc, res := h.walk(chatCall(true), []*Target{ta}, 5*time.Second, obs)
	if !res.Stream || res.Status != 200 || res.Attempts != 1 || res.TTFB <= 0 {
		t.Fatalf("result %+v", res)
	}
	if got := streamBody(t, rc); got != ev1+ev2+done {
		t.Fatalf("stream body %q", got)
	}
	if ct := hdr(rc, "Content-Type"); ct != "text/event-stream" || hdr(rc, HeaderTarget) != "a" || hdr(rc, HeaderAttempts) != "1" {
		t.Fatalf("headers: content type %q target %q", ct, hdr(rc, HeaderTarget))
	}
	end := waitEnd(t, obs)
	if end.Class != ClassOK || end.Target != ta {
		t.Fatalf("stream end %+v", end)
	}
	if ta.Limiter().InFlight() != 0 {
		t.Fatal("the stream did not release its slot")
	}
}

func TestStreamFirstFrameErrorFailsOver(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", sse(0, "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":null}}\n\n"))
	h.mock("b", sse(0, ev1, done))
	ta := h.target("a", nil)
	obs := newRec()
	rc, res := h.walk(chatCall(true), []*Target{ta, h.target("b", nil)}, 5*time.Second, obs)
	if got := streamBody(t, rc); got != ev1+done {
		t.Fatalf("stream body %q", got)
	}
	if a.calls.Load() != 1 || res.Attempts != 2 || res.Failovers != 1 || hdr(rc, HeaderTarget) != "b" {
		t.Fatalf("a calls %d result %+v", a.calls.Load(), res)
	}
	if strings.Join(obs.fails, ",") != "a:server" {
		t.Fatalf("failovers %v", obs.fails)
	}
	waitEnd(t, obs)
	if ta.Limiter().InFlight() != 0 || ta.Breaker().failures.Load() != 1 {
		t.Fatalf("a: in flight %d, breaker failures %d", ta.Limiter().InFlight(), ta.Breaker().failures.Load())
	}
}

func TestStreamTimeoutBeforeFirstByteFailsOver(t *testing.T) {
	h := newHarness(t)
	h.mock("a", sse(300*time.Millisecond, ev1, done))
	h.mock("b", sse(0, ev2, done))
	ta := h.target("a", func(ct *config.Target) { ct.Timeout = 50 * time.Millisecond })
	obs := newRec()
	rc, _ := h.walk(chatCall(true), []*Target{ta, h.target("b", nil)}, 5*time.Second, obs)
	if got := streamBody(t, rc); got != ev2+done {
		t.Fatalf("stream body %q", got)
	}
	if strings.Join(obs.fails, ",") != "a:timeout" {
		t.Fatalf("failovers %v", obs.fails)
	}
}

func TestStreamNotCutByAttemptTimeoutAfterCommit(t *testing.T) {
	h := newHarness(t)
	// Six 50ms gaps: 300ms in all, over the 200ms attempt timeout, each gap
	// well under it.
	h.mock("a", sse(50*time.Millisecond, ev1, ev2, ev1, ev2, ev1, done))
	obs := newRec()
	rc, _ := h.walk(chatCall(true), []*Target{h.target("a", func(ct *config.Target) { ct.Timeout = 200 * time.Millisecond })}, 5*time.Second, obs)
	if got := streamBody(t, rc); got != ev1+ev2+ev1+ev2+ev1+done {
		t.Fatalf("stream body %q", got)
	}
	if end := waitEnd(t, obs); end.Class != ClassOK {
		t.Fatalf("stream end class %v", end.Class)
	}
}

func TestStreamIdleAfterCommitEndsWithErrorFrame(t *testing.T) {
	h := newHarness(t)
	h.mock("a", func(ctx *fasthttp.RequestCtx, _ int) {
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			w.WriteString(ev1) //nolint:errcheck
			w.Flush()          //nolint:errcheck
			time.Sleep(400 * time.Millisecond)
		})
	})
	obs := newRec()
	rc, _ := h.walk(chatCall(true), []*Target{h.target("a", func(ct *config.Target) { ct.Timeout = 80 * time.Millisecond })}, 5*time.Second, obs)
	got := streamBody(t, rc)
	if !strings.HasPrefix(got, ev1+"data: {\"error\":") || !strings.Contains(got, CodeGatewayTimeout) || strings.Contains(got, "[DONE]") {
		t.Fatalf("stream body %q", got)
	}
	if end := waitEnd(t, obs); end.Class != ClassTimeout {
		t.Fatalf("stream end class %v", end.Class)
	}
}

func TestStreamMidStreamFailureEndsWithErrorFrame(t *testing.T) {
	cases := []struct {
		name   string
		events []string
		class  Class
		frame  string
	}{
		{"eof before done", []string{ev1, ev2}, ClassTransport, `data: {"error":{"message":"upstream stream ended before [DONE]","type":"upstream_error","param":null,"code":"upstream_error"}}` + "\n\n"},
		{"error event", []string{ev1, "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n", ev2}, ClassServer,
			"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.mock("a", sse(0, c.events...))
			b := h.mock("b", sse(0, ev1, done))
			ta := h.target("a", nil)
			obs := newRec()
			rc, res := h.walk(chatCall(true), []*Target{ta, h.target("b", nil)}, 5*time.Second, obs)
			got := streamBody(t, rc)
			want := ev1
			if c.class == ClassTransport {
				want += ev2
			}
			want += c.frame
			if got != want {
				t.Fatalf("stream body\n got %q\nwant %q", got, want)
			}
			end := waitEnd(t, obs)
			if end.Class != c.class || res.Attempts != 1 {
				t.Fatalf("end class %v attempts %d", end.Class, res.Attempts)
			}
			if b.calls.Load() != 0 {
				t.Fatal("a committed stream failed over")
			}
			if ta.Breaker().failures.Load() != 1 || ta.Limiter().InFlight() != 0 {
				t.Fatalf("breaker failures %d in flight %d", ta.Breaker().failures.Load(), ta.Limiter().InFlight())
			}
		})
	}
}

func TestStreamClientDisconnectCancelsUpstream(t *testing.T) {
	h := newHarness(t)
	var upstreamGone atomic.Bool
	h.mock("a", func(ctx *fasthttp.RequestCtx, _ int) {
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			for i := 0; i < 2000; i++ {
				w.WriteString(ev1) //nolint:errcheck
				if w.Flush() != nil {
					upstreamGone.Store(true)
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	})
	ta := h.target("a", nil)
	obs := newRec()
	rc, _ := h.walk(chatCall(true), []*Target{ta}, 5*time.Second, obs)
	buf := make([]byte, len(ev1))
	if _, err := rc.Response.BodyStream().Read(buf); err != nil {
		t.Fatal(err)
	}
	rc.Response.CloseBodyStream() //nolint:errcheck // the client goes away
	end := waitEnd(t, obs)
	if end.Class != ClassCanceled {
		t.Fatalf("stream end class %v, want canceled", end.Class)
	}
	if ta.Limiter().InFlight() != 0 {
		t.Fatal("slot not released after the client left")
	}
	waitFor(t, upstreamGone.Load)
	if ta.Breaker().failures.Load() != 0 {
		t.Fatal("a client cancel counted as a breaker failure")
	}
}

// TestStreamFlushesEachEventThroughServer runs the walk inside a real
// fasthttp server and proves the first event reaches the client before the
// upstream sends the second (no buffering).
func TestStreamFlushesEachEventThroughServer(t *testing.T) {
	h := newHarness(t)
	proceed := make(chan struct{})
	h.mock("a", func(ctx *fasthttp.RequestCtx, _ int) {
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			w.WriteString(ev1) //nolint:errcheck
			w.Flush()          //nolint:errcheck
			select {
			case <-proceed:
			case <-time.After(5 * time.Second):
			}
			w.WriteString(ev2 + done) //nolint:errcheck
		})
	})
	ta := h.target("a", nil)
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Logger: quietLogger{}, Handler: func(rc *fasthttp.RequestCtx) {
		call := chatCall(true)
		call.Body = append([]byte(nil), rc.PostBody()...)
		Walk(rc, call, []*Target{ta}, time.Now().Add(5*time.Second), nil)
	}}
	go srv.Serve(ln)     //nolint:errcheck
	defer srv.Shutdown() //nolint:errcheck
	c, err := ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Length: " + itoa(len(chatBody)) + "\r\n\r\n" + chatBody)) //nolint:errcheck
	br := bufio.NewReader(c)
	var seen strings.Builder
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(seen.String(), `"Hel"`) {
		if time.Now().After(deadline) {
			t.Fatalf("first event not delivered before the second was sent; got %q", seen.String())
		}
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		seen.WriteString(line)
	}
	if !strings.Contains(seen.String(), "X-Gateway-Target: a") {
		t.Fatalf("headers %q", seen.String())
	}
	close(proceed)
	for !strings.Contains(seen.String(), "[DONE]") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("%v after %q", err, seen.String())
		}
		seen.WriteString(line)
	}
}

func TestStreamConnectionReusedAfterDone(t *testing.T) {
	h := newHarness(t)
	h.mock("a", sse(0, ev1, done))
	var dials atomic.Int32
	inner := h.pool.Dial
	h.pool.Dial = func(addr string) (net.Conn, error) { dials.Add(1); return inner(addr) }
	ta := h.target("a", nil)
	for i := 0; i < 3; i++ {
		obs := newRec()
		rc, _ := h.walk(chatCall(true), []*Target{ta}, 5*time.Second, obs)
		if got := streamBody(t, rc); got != ev1+done {
			t.Fatalf("stream body %q", got)
		}
		waitEnd(t, obs)
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d connections for 3 sequential streams, want 1 (kept alive)", n)
	}
}
