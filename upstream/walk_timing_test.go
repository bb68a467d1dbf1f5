package upstream

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// BenchmarkWalkNonStream is one whole non-stream walk against an in-memory
// OpenAI-compatible upstream: build, send, read, write the answer. Its
// allocs/op are the request path's own (the upstream answers a constant
// body and allocates nothing); BenchmarkBareHostClient is the same exchange
// without the walk.
func BenchmarkWalkNonStream(b *testing.B) {
	h := newHarness(b)
	h.constMock("a", []byte(`{"id":"a","object":"chat.completion","choices":[]}`))
	ta := h.target("a", nil)
	call := chatCall(false)
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod("POST")
	rc.Request.SetRequestURI("/v1/chat/completions")
	rc.Response.Header.Set("X-Request-Id", "req-1")
	chain := []*Target{ta}
	b.ReportAllocs()
	for b.Loop() {
		rc.Response.ResetBody()
		res := Walk(&rc, call, chain, time.Now().Add(5*time.Second), nil)
		if res.Status != 200 {
			b.Fatalf("status %d", res.Status)
		}
	}
}

// BenchmarkBareHostClient is the baseline twin of BenchmarkWalkNonStream: the
// same request through the same HostClient, with nothing of the walk.
func BenchmarkBareHostClient(b *testing.B) {
	h := newHarness(b)
	h.constMock("a", []byte(`{"id":"a","object":"chat.completion","choices":[]}`))
	ta := h.target("a", nil)
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	b.ReportAllocs()
	for b.Loop() {
		req.Reset()
		req.Header.SetMethod("POST")
		req.SetRequestURI("http://a/v1/chat/completions")
		req.SetBodyString(chatBody)
		if err := ta.client().Do(req, resp); err != nil || resp.StatusCode() != 200 {
			b.Fatal(err)
		}
	}
}
