//go:build !race

package upstream

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// A whole successful non-stream walk (build, send, read, translate into the
// client response) allocates nothing once pools are warm. The upstream is a
// bare fasthttp server answering a constant body, so it allocates nothing
// of its own either.
func TestWalkNonStreamAllocsZero(t *testing.T) {
	h := newHarness(t)
	h.constMock("a", []byte(`{"id":"a","object":"chat.completion","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":5}}`))
	ta := h.target("a", nil)
	call := chatCall(false)
	chain := []*Target{ta}
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod("POST")
	rc.Request.SetRequestURI("/v1/chat/completions")
	rc.Response.Header.Set("X-Request-Id", "req-1")
	// Trace context forwarded, usage read: still nothing allocated.
	rc.Request.Header.Set("traceparent", goodParent)
	rc.Request.Header.Set("tracestate", goodState)
	withTrace(call, &rc.Request.Header)
	deadline := time.Now().Add(time.Minute)
	run := func() {
		rc.Response.ResetBody() // the body buffer goes back to its pool, as between requests
		if res := Walk(&rc, call, chain, deadline, nil); res.Status != 200 || res.Usage.Prompt != 8 {
			t.Fatalf("status %d usage %+v", res.Status, res.Usage)
		}
	}
	for i := 0; i < 100; i++ {
		run()
	}
	if allocs := testing.AllocsPerRun(1000, run); allocs != 0 {
		t.Fatalf("a non-stream walk allocates %v per run", allocs)
	}
}

// A whole successful streamed walk (send, first event, commit, relay to the
// end, the connection back to the pool) allocates nothing: the pass-through
// decoder is pooled, and the connection held for the stream lives in the
// walk's pooled callGuard (fasthttp's own transport spent four allocations
// per stream on its body wrapper and closures).
func TestWalkStreamAllocs(t *testing.T) {
	h := newHarness(t)
	h.constMock("a", []byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
	var dials atomic.Int32
	inner := h.pool.Dial
	h.pool.Dial = func(addr string) (net.Conn, error) { dials.Add(1); return inner(addr) }
	ta := h.target("a", nil)
	call := chatCall(true)
	chain := []*Target{ta}
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod("POST")
	rc.Request.SetRequestURI("/v1/chat/completions")
	rc.Response.Header.Set("X-Request-Id", "req-1")
	deadline := time.Now().Add(time.Minute)
	run := func() {
		if res := Walk(&rc, call, chain, deadline, nil); res.Status != 200 || !res.Stream {
			t.Fatalf("status %d stream %v", res.Status, res.Stream)
		}
		if n, err := rc.Response.BodyStream().(io.WriterTo).WriteTo(io.Discard); err != nil || n == 0 {
			t.Fatalf("relayed %d bytes: %v", n, err)
		}
		rc.Response.CloseBodyStream() //nolint:errcheck // as fasthttp's server does once written
	}
	for i := 0; i < 100; i++ {
		run()
	}
	if allocs := testing.AllocsPerRun(1000, run); allocs != 0 {
		t.Fatalf("a streamed walk allocates %v per run", allocs)
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d connections for sequential streams, want 1 (pooled after each)", n)
	}
}
