package hotpath

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// FuzzRouteRequest feeds arbitrary bodies and metadata headers through the
// hot path's routing. Whatever the input: no panic; a refusal is a 400 or
// 404 OpenAI envelope; an acceptance yields only members of the matched
// chain. (go test runs the seeds; go test -fuzz explores.)
func FuzzRouteRequest(f *testing.F) {
	st, err := Build(mustParse(f, `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
    - {key: metadata, field: tier, value: gold, target_keys: [b, c]}
    - {key: has_tools, value: "true", target_key: c}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: k, models: [gpt-4o, base]}
  - {virtual_key: b, provider: anthropic, base_url: "http://127.0.0.1:2", api_key: k}
  - {virtual_key: c, provider: openai, base_url: "http://127.0.0.1:3/v1", api_key: k, models: ["x-*"]}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][2]string{
		{`{"model":"gpt-4o"}`, ``},
		{`{"model":"x-1","tools":[{}]}`, `{"tier":"gold"}`},
		{`{"model":"x-1"}`, `{"tier":"gold","n":1.0}`},
		{`{"model":"base","stream":true,"user":"u"}`, `{"tier":null}`},
		{`[1,2]`, `nope`},
		{`{"model":"\ud800"}`, `{"a":"\ud800"}`},
		{`{"model":"m"} trailing`, `{}`},
	} {
		f.Add([]byte(s[0]), s[1], uint8(0))
	}
	f.Add([]byte(`{"model":"x-1","metadata":{"user_id":"u"},"user":1}`), `{"tier":"gold"}`, uint8(router.SurfaceMessages))
	f.Add([]byte(`{"model":"x-1","metadata":{"user_id":2}}`), ``, uint8(router.SurfaceMessages))
	f.Add([]byte(`{"model":"x-1","user":"u","stream":true}`), ``, uint8(router.SurfaceResponses))
	f.Fuzz(func(t *testing.T, body []byte, meta string, surface uint8) {
		s := router.Surface(surface % uint8(router.NumSurfaces))
		var rc fasthttp.RequestCtx
		var hdr string
		if meta != "" && !strings.ContainsAny(meta, "\r\n") {
			hdr = "X-Gateway-Metadata: " + meta + "\r\n"
		}
		if err := parseRequest(t, &rc.Request, "/v1/chat/completions", hdr, body); err != nil {
			return // a head the server would refuse before routing
		}
		sc := &scratch{}
		if !routeRequest(&rc, st, s, false, sc) {
			status := rc.Response.StatusCode()
			envelope := `{"error":{"message":`
			if s == router.SurfaceMessages {
				envelope = `{"type":"error","error":{"type":`
			}
			if (status != 400 && status != 404 && status != 413) ||
				!strings.HasPrefix(string(rc.Response.Body()), envelope) {
				t.Fatalf("refusal %d %s", status, rc.Response.Body())
			}
			return
		}
		// Every candidate is named by the rule X-Gateway-Rule reports (or
		// is targets[0] for the fallback).
		named := []string{st.Config.Targets[0].VirtualKey}
		if sc.rule >= 0 {
			named = st.Config.Strategy.Conditions[sc.rule].Chain()
		}
		if got := string(rc.Response.Header.Peek("X-Gateway-Rule")); (sc.rule < 0) != (got == "fallback") {
			t.Fatalf("rule %d but X-Gateway-Rule %q", sc.rule, got)
		}
		for _, c := range sc.cands {
			if !slices.Contains(named, c.Name) {
				t.Fatalf("candidate %s is outside the chain %v of rule %d", c.Name, named, sc.rule)
			}
		}
	})
}
