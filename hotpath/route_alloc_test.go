//go:build !race

package hotpath

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// TestRouteAllocatesNothing covers the hot path's own share of a request:
// peek, metadata, match, candidates, X-Gateway-Rule and X-Request-Id.
func TestRouteAllocatesNothing(t *testing.T) {
	st, err := Build(mustParse(t, `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
    - {key: metadata, field: tier, value: gold, target_keys: [b, a]}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: k}
  - {virtual_key: b, provider: openai, base_url: "http://127.0.0.1:2/v1", api_key: k}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	var rc fasthttp.RequestCtx
	if err := parseRequest(t, &rc.Request, "/v1/chat/completions", "X-Gateway-Metadata: {\"tier\":\"gold\",\"n\":1.5}\r\n",
		[]byte(`{"model":"m-1","messages":[{"role":"user","content":"hi"}],"stream":true,"tools":[{}],"user":"u"}`)); err != nil {
		t.Fatal(err)
	}
	sc := scratchPool.Get().(*scratch)
	run := func() {
		setRequestID(&rc)
		if !routeRequest(&rc, st, router.SurfaceChat, false, sc) || len(sc.cands) != 2 || sc.cands[0].Name != "b" || sc.rule != 1 {
			t.Fatalf("routed to %d candidates, rule %d: %s", len(sc.cands), sc.rule, rc.Response.Body())
		}
	}
	run()
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("routing allocates %v times per request, want 0", n)
	}
}
