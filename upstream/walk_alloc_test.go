//go:build !race

package upstream

import (
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
