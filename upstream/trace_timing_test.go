package upstream

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkTraceContext is what the walk pays per request to find the trace
// headers: among an SDK's usual dozen headers, with and without them.
func BenchmarkTraceContext(b *testing.B) {
	for _, withTrace := range []bool{false, true} {
		var h fasthttp.RequestHeader
		for _, kv := range [][2]string{{"Host", "api"}, {"User-Agent", "OpenAI/Python 1.50.0"}, {"Accept", "application/json"},
			{"Content-Type", "application/json"}, {"Authorization", "Bearer sk-x"}, {"X-Stainless-Lang", "python"},
			{"X-Stainless-Package-Version", "1.50.0"}, {"X-Stainless-Os", "Linux"}, {"X-Stainless-Arch", "x64"},
			{"X-Stainless-Runtime", "CPython"}, {"X-Stainless-Runtime-Version", "3.12"}, {"X-Request-Id", "r-1"}} {
			h.Set(kv[0], kv[1])
		}
		name := "no-trace"
		if withTrace {
			h.Set("traceparent", goodParent)
			h.Set("tracestate", goodState)
			name = "trace"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				traceContext(&h)
			}
		})
	}
}
