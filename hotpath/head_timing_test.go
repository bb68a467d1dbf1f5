package hotpath

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// BenchmarkScreenHeadPasses is what reading a request's header section
// costs, on the head an OpenAI SDK sends with a client key, an Origin,
// X-Gateway-Metadata and a trace context, over a loopback connection:
// "separate" as before the one pass (the screen's walk, the key check's,
// the metadata's, and PeekAll of the trace headers for the walk and again
// for the access log), "one" as now (head.scan, then each reader).
func BenchmarkScreenHeadPasses(b *testing.B) {
	st, err := Build(mustParse(b, `
server:
  allowed_origins: ["https://a.example", "https://app.example.com"]
strategy: {mode: conditional, conditions: [{key: model, value: m, target_key: a}]}
targets: [{virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1"}]
auth: {keys: [{name: k, key: sk-proj-0123456789abcdef0123456789abcdef}]}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		b.Fatal(err)
	}
	var rc fasthttp.RequestCtx
	rc.Init2(loopbackConnStub{}, nil, false)
	if err := parseRequest(b, &rc.Request, "/v1/chat/completions",
		"Host: 127.0.0.1:8080\r\nAccept: application/json\r\nAuthorization: Bearer sk-proj-0123456789abcdef0123456789abcdef\r\n"+
			"User-Agent: OpenAI/Python 1.54.0\r\nX-Stainless-Lang: python\r\nX-Stainless-Package-Version: 1.54.0\r\n"+
			"X-Stainless-Runtime: CPython\r\nX-Request-Id: 7f1c9a\r\nOrigin: https://app.example.com\r\n"+
			"X-Gateway-Metadata: {\"tier\":\"gold\"}\r\n"+
			"traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\ntracestate: a=1\r\n", []byte(`{"model":"gpt-4o"}`)); err != nil {
		b.Fatal(err)
	}
	b.Run("separate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if refScreen(&rc, st) != refusedNone {
				b.Fatal("refused")
			}
			if _, ok := refAuthenticate(&rc, st, router.SurfaceChat); !ok {
				b.Fatal("no key")
			}
			if _, n := headerField(rc.Request.Header.RawHeaders(), headerMetadataLower); n != 1 {
				b.Fatal("no metadata")
			}
			if p, _ := refTraceContext(&rc.Request.Header); p == nil || upstream.TraceID(&rc.Request.Header) == nil {
				b.Fatal("no trace")
			}
		}
	})
	g := New(st)
	b.Run("one", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var h head
			h.scan(&rc.Request.Header)
			if screenHead(&rc, st, &h, g.onLoopback(&rc)) != refusedNone {
				b.Fatal("refused")
			}
			if _, ok := authenticateHead(&rc, st, router.SurfaceChat, &h); !ok {
				b.Fatal("no key")
			}
			if h.nMeta != 1 {
				b.Fatal("no metadata")
			}
			if p, _ := h.trace(); p == nil || upstream.TraceIDOf(p) == nil {
				b.Fatal("no trace")
			}
		}
	})
}
