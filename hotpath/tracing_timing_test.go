package hotpath

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchyard/switchyard/decisions"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/tracing"
	"github.com/switchyard/switchyard/upstream"
)

// BenchmarkHandlerObservability measures a whole proxied request through
// Gateway.Handler (as TestHandlerAllocatesNothing makes it) with tracing off,
// with tracing at sample_ratio 0.01 and 1 (spans to a no-op exporter), and
// with the console's decision ring filled from Finished; "off" is the
// baseline twin, so each row reads as a ratio.
//
//	go test -run '^$' -bench HandlerObservability -benchtime=20000x ./hotpath/
func BenchmarkHandlerObservability(b *testing.B) {
	ln := answeringUpstream(b, []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`))
	st, err := Build(mustParse(b, `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://`+ln.Addr().String()+`/v1", api_key: sk-a}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		b.Fatal(err)
	}
	var ring decisions.Ring
	for _, bc := range []struct {
		name   string
		tracer *tracing.Tracer
		ring   bool
	}{
		{"off", nil, false},
		{"tracing_ratio_0.01", tracing.NewWithExporter(tracetest.NewNoopExporter(), 0.01, "bench"), false},
		{"tracing_ratio_1", tracing.NewWithExporter(tracetest.NewNoopExporter(), 1, "bench"), false},
		{"decision_ring", nil, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := New(st)
			g.Tracer = bc.tracer
			g.Finished = func(e *telemetry.Entry) {
				if bc.ring {
					ring.Add(e, time.Now())
				}
			}
			var req fasthttp.Request
			req.Header.SetMethod("POST")
			req.SetRequestURI("/v1/chat/completions")
			req.SetBodyString(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
			var rc fasthttp.RequestCtx
			rc.Init(&req, nil, nil)
			b.ReportAllocs()
			for b.Loop() {
				rc.Response.Reset()
				g.Handler(&rc)
				if rc.Response.StatusCode() != 200 {
					b.Fatalf("status %d", rc.Response.StatusCode())
				}
			}
		})
		if bc.tracer != nil {
			_ = bc.tracer.Shutdown(b.Context())
		}
	}
}
