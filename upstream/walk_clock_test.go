package upstream

import (
	"bufio"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

// The walk reads the clock only at its start, around each upstream call and
// after waits (see walk.now). These tests pin what that must still get
// right: durations include the wait for the upstream, and a wait that used
// up the request deadline ends the walk.

// tookObserver records the duration of every Attempt.
type tookObserver struct {
	NopObserver
	mu   sync.Mutex
	took []time.Duration
}

func (o *tookObserver) Attempt(_ *Target, _ Class, _ int, took time.Duration) {
	o.mu.Lock()
	o.took = append(o.took, took)
	o.mu.Unlock()
}

func TestWalkTimesIncludeTheUpstreamWait(t *testing.T) {
	const delay = 60 * time.Millisecond
	h := newHarness(t)
	h.mock("a", func(ctx *fasthttp.RequestCtx, n int) {
		time.Sleep(delay)
		ok("a")(ctx, n)
	})
	ta := h.target("a", nil)
	obs := &tookObserver{}
	start := time.Now()
	rc, res := h.walk(chatCall(false), []*Target{ta}, 5*time.Second, obs)
	if rc.Response.StatusCode() != 200 {
		t.Fatalf("status %d", rc.Response.StatusCode())
	}
	if len(obs.took) != 1 || obs.took[0] < delay {
		t.Errorf("attempt durations %v; want one ≥ %v", obs.took, delay)
	}
	if res.TTFB < delay {
		t.Errorf("TTFB %v; want ≥ %v", res.TTFB, delay)
	}
	if got := res.End.Sub(start); got < delay || res.End.After(time.Now()) {
		t.Errorf("End is %v after the start; want ≥ %v and not in the future", got, delay)
	}
}

func TestWalkStreamTimesIncludeTheFirstEventWait(t *testing.T) {
	const pause = 80 * time.Millisecond
	h := newHarness(t)
	// The headers and a comment leave at once, so the response headers are
	// in before the first event: the attempt is not over when they arrive.
	h.mock("a", func(ctx *fasthttp.RequestCtx, _ int) {
		ctx.SetContentType("text/event-stream")
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			w.WriteString(": opening\n\n") //nolint:errcheck
			w.Flush()                      //nolint:errcheck
			time.Sleep(pause)
			w.WriteString("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n") //nolint:errcheck
		})
	})
	ta := h.target("a", nil)
	obs := &tookObserver{}
	rc, res := h.walk(chatCall(true), []*Target{ta}, 5*time.Second, obs)
	if !res.Stream {
		t.Fatalf("not streamed: status %d body %s", rc.Response.StatusCode(), rc.Response.Body())
	}
	streamBody(t, rc)
	if len(obs.took) != 1 || obs.took[0] < pause {
		t.Errorf("attempt durations %v; want one ≥ %v (headers come at once, the first event after %v)", obs.took, pause, pause)
	}
	if res.TTFB < pause {
		t.Errorf("TTFB %v; want ≥ %v", res.TTFB, pause)
	}
}

// A stream whose first event never comes in time is an attempt timeout;
// the attempt's duration reported to the observer covers that wait.
func TestWalkStreamFirstEventTimeoutDuration(t *testing.T) {
	h := newHarness(t)
	h.mock("a", sse(300*time.Millisecond, "data: {}\n\n"))
	ta := h.target("a", func(ct *config.Target) { ct.Timeout = 80 * time.Millisecond })
	obs := &tookObserver{}
	_, res := h.walk(chatCall(true), []*Target{ta}, 5*time.Second, obs)
	if res.Class != ClassTimeout {
		t.Fatalf("class %v; want timeout", res.Class)
	}
	if len(obs.took) == 0 || obs.took[0] < 80*time.Millisecond {
		t.Errorf("attempt durations %v; want the first ≥ 80ms", obs.took)
	}
}

// A wait for a's slot that runs into the request deadline ends the walk:
// the next member is not called after the deadline has passed.
func TestWalkLimiterWaitUntilDeadlineDoesNotCallNextMember(t *testing.T) {
	h := newHarness(t)
	h.mock("a", ok("a"))
	b := h.mock("b", ok("b"))
	ta := h.target("a", func(ct *config.Target) {
		ct.Concurrency = config.Concurrency{MaxConcurrency: 1, QueueSize: 1}
	})
	tb := h.target("b", nil)
	if ok, _ := ta.Limiter().Acquire(time.Time{}, nil); !ok {
		t.Fatal("could not take a's only slot")
	}
	defer ta.Limiter().Release()
	rc, res := h.walk(chatCall(false), []*Target{ta, tb}, 40*time.Millisecond, nil)
	if rc.Response.StatusCode() != fasthttp.StatusGatewayTimeout || res.Class != ClassTimeout {
		t.Fatalf("status %d class %v; want 504 timeout", rc.Response.StatusCode(), res.Class)
	}
	if n := b.calls.Load(); n != 0 || res.Attempts != 0 {
		t.Fatalf("b called %d times, %d attempts, after the deadline passed in a's queue", n, res.Attempts)
	}
}

// A streamed call's error body is read after the headers came back; the
// walk's clock must count that read. Here a answers 500 and sends its body
// slowly, past the request deadline: the walk must end with a's failure,
// not go on to b with a deadline already gone (where b would be charged a
// timeout it never had).
func TestWalkStreamErrorBodyReadCountsAgainstTheDeadline(t *testing.T) {
	h := newHarness(t)
	h.mock("a", func(ctx *fasthttp.RequestCtx, _ int) {
		ctx.SetStatusCode(500)
		ctx.SetContentType("application/json")
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			w.WriteString(`{"error":`) //nolint:errcheck
			w.Flush()                  //nolint:errcheck
			time.Sleep(400 * time.Millisecond)
			w.WriteString(`{"message":"boom"}}`) //nolint:errcheck
		})
	})
	b := h.mock("b", ok("b"))
	ta, tb := h.target("a", nil), h.target("b", nil)
	obs := &tookObserver{}
	rc, res := h.walk(chatCall(true), []*Target{ta, tb}, 200*time.Millisecond, obs)
	if n := b.calls.Load(); n != 0 || res.Attempts != 1 {
		t.Fatalf("b called %d times, %d attempts: the walk went on after the deadline passed in a's error body", n, res.Attempts)
	}
	if st := rc.Response.StatusCode(); st != fasthttp.StatusBadGateway || res.Class != ClassServer {
		t.Fatalf("status %d class %v; want 502 from a's 500", st, res.Class)
	}
	if len(obs.took) != 1 || obs.took[0] < 150*time.Millisecond {
		t.Fatalf("attempt durations %v; want one covering the body read (~200ms)", obs.took)
	}
}

// A 204 (no body) to a streamed call is a failed attempt like an empty
// stream: the walk moves on to the next member. It used to dereference a
// nil body stream: a panic, a 500 and no failover.
func TestWalkStreamNoBodyFailsOver(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", func(ctx *fasthttp.RequestCtx, _ int) { ctx.SetStatusCode(fasthttp.StatusNoContent) })
	h.mock("b", sse(0, "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n", "data: [DONE]\n\n"))
	ta, tb := h.target("a", nil), h.target("b", nil)
	obs := newRec()
	rc, res := h.walk(chatCall(true), []*Target{ta, tb}, 5*time.Second, obs)
	if !res.Stream || res.Target != tb || res.Attempts != 2 || a.calls.Load() != 1 {
		t.Fatalf("stream %v target %v attempts %d a calls %d; want b's stream after a's 204", res.Stream, res.Target, res.Attempts, a.calls.Load())
	}
	if body := streamBody(t, rc); !strings.Contains(body, "data: [DONE]") {
		t.Fatalf("body %q", body)
	}
	if len(obs.attempts) == 0 || !strings.HasPrefix(obs.attempts[0], "a:transport:") {
		t.Fatalf("attempts %v; want a's first as a transport failure", obs.attempts)
	}
}

// The walk reads the clock when it starts, not the request's start
// (rc.Time()): a body that took long to arrive must not shorten the
// attempt's own timeout, nor make a park that has expired since look
// current.
func TestWalkStartsFromThePresentNotTheRequestStart(t *testing.T) {
	h := newHarness(t)
	h.mock("a", func(ctx *fasthttp.RequestCtx, n int) {
		time.Sleep(150 * time.Millisecond)
		ok("a")(ctx, n)
	})
	ta := h.target("a", func(ct *config.Target) { ct.Timeout = 300 * time.Millisecond })
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/chat/completions")
	rc := &fasthttp.RequestCtx{}
	rc.Init(&req, nil, nil) // rc.Time() is now
	ta.Park().ParkUntil(time.Now().Add(200 * time.Millisecond))
	time.Sleep(400 * time.Millisecond) // the body streams in; the park expires
	res := Walk(rc, chatCall(false), []*Target{ta}, time.Now().Add(5*time.Second), nil)
	if res.Status != 200 || res.Attempts != 1 {
		t.Fatalf("status %d class %v attempts %d: the walk judged its member by the request's start", res.Status, res.Class, res.Attempts)
	}
}
