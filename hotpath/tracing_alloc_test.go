//go:build !race

package hotpath

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/tracing"
	"github.com/switchyard/switchyard/upstream"
)

// TestHandlerTracingNotSampledAllocs: with tracing on, a request that is
// not sampled (sample_ratio 0, or a client traceparent whose sampled flag
// is off) allocates nothing, as with tracing off (TestHandlerAllocatesNothing).
func TestHandlerTracingNotSampledAllocs(t *testing.T) {
	ln := answeringUpstream(t, []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`))
	st, err := Build(mustParse(t, `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://`+ln.Addr().String()+`/v1", api_key: sk-a}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tr := tracing.NewWithExporter(exp, 0, "test")
	defer tr.Shutdown(t.Context())
	g := New(st)
	g.Tracer = tr
	g.Finished = func(*telemetry.Entry) {}
	for _, parent := range []string{"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"} {
		var req fasthttp.Request
		req.Header.SetMethod("POST")
		req.SetRequestURI("/v1/chat/completions")
		if parent != "" {
			req.Header.Set("Traceparent", parent)
		}
		req.SetBodyString(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
		var rc fasthttp.RequestCtx
		rc.Init(&req, nil, nil)
		run := func() {
			rc.Response.Reset()
			g.Handler(&rc)
			if rc.Response.StatusCode() != 200 {
				t.Fatalf("status %d", rc.Response.StatusCode())
			}
		}
		for range 50 {
			run()
		}
		if n := testing.AllocsPerRun(500, run); n != 0 {
			t.Errorf("parent %q: a request not sampled allocates %v times, want 0", parent, n)
		}
	}
	_ = tr.ForceFlush(t.Context())
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans exported for requests not sampled", n)
	}
}
