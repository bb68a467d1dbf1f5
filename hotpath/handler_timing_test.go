package hotpath

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// Reproduce: go test -run '^$' -bench . -benchtime=200ms ./hotpath/

var benchBody = []byte(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},` +
	`{"role":"user","content":"` + strings.Repeat("Tell me about routing. ", 40) + `"}],` +
	`"user":"alice","stream":true,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"temperature":0.2}`)

// BenchmarkPeek measures reading the four routing fields of a ~1.2 KB chat
// body; BenchmarkPeekStdlibBaseline decodes the same fields with
// encoding/json for scale.
func BenchmarkPeek(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	b.RunParallel(func(pb *testing.PB) {
		p := &peek{}
		for pb.Next() {
			if err := p.parse(benchBody, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// largeBody is a ~90 KB chat body, a long conversation: 40 turns of prose
// with a quoted phrase and a line break escaped in each. The peek's cost
// grows with the body; the bare proxy's does not.
var largeBody = func() []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."}`)
	for i := range 40 {
		role := [2]string{"user", "assistant"}[i%2]
		b.WriteString(`,{"role":"` + role + `","content":"` +
			strings.Repeat("Routing decides where each request goes, and the gateway must never send it elsewhere. ", 24) +
			`As the operator said, \"pin it\".\n"}`)
	}
	b.WriteString(`],"user":"alice","stream":true,"temperature":0.2}`)
	return []byte(b.String())
}()

// BenchmarkPeekLarge is BenchmarkPeek on largeBody.
func BenchmarkPeekLarge(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(largeBody)))
	p := &peek{}
	for b.Loop() {
		if err := p.parse(largeBody, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPeekStdlibBaseline(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var v struct {
				Model  string            `json:"model"`
				User   *string           `json:"user"`
				Stream bool              `json:"stream"`
				Tools  []json.RawMessage `json:"tools"`
			}
			if err := json.Unmarshal(benchBody, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRouteRequest measures the hot path's own work for one request
// (peek, metadata header, match over 50 rules, candidates, headers), i.e.
// everything but the walk.
func BenchmarkRouteRequest(b *testing.B) {
	var conds strings.Builder
	for i := range 49 {
		conds.WriteString("    - {key: model, value: m" + strings.Repeat("x", i) + ", target_key: b}\n")
	}
	conds.WriteString("    - {key: metadata, field: tier, value: gold, target_keys: [b, a]}\n")
	st, err := Build(mustParse(b, `
strategy:
  mode: conditional
  conditions:
`+conds.String()+`
targets:
  - {virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: k}
  - {virtual_key: b, provider: openai, base_url: "http://127.0.0.1:2/v1", api_key: k}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var rc fasthttp.RequestCtx
		if err := parseRequest(b, &rc.Request, "/v1/chat/completions",
			"X-Gateway-Metadata: {\"tier\":\"gold\",\"team\":\"search\"}\r\n", benchBody); err != nil {
			b.Fatal(err)
		}
		sc := &scratch{}
		for pb.Next() {
			setRequestID(&rc)
			if !routeRequest(&rc, st, router.SurfaceChat, false, sc) || len(sc.cands) != 2 {
				b.Fatalf("not routed: %s", rc.Response.Body())
			}
		}
	})
}
