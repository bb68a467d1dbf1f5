//go:build !race

package hotpath

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// Peeking and routing a Responses body and a Messages body (user from
// metadata.user_id, metadata header, anthropic headers kept for the
// pass-through) allocate nothing, as on chat.
func TestRouteNewSurfacesAllocateNothing(t *testing.T) {
	st, err := Build(mustParse(t, `
strategy:
  mode: conditional
  conditions:
    - {key: user, value: vip, target_keys: [ant, oai]}
    - {key: metadata, field: tier, value: gold, target_keys: [oai, ant]}
targets:
  - {virtual_key: oai, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: k}
  - {virtual_key: ant, provider: anthropic, base_url: "http://127.0.0.1:2", api_key: k}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path    string
		surface router.Surface
		count   bool
		body    string
		want    string
	}{
		{"/v1/responses", router.SurfaceResponses, false,
			`{"model":"gpt-5","input":[{"role":"user","content":"hi"}],"user":"vip","stream":true,"tools":[{"type":"web_search"}],"metadata":{"a":"b"}}`, "ant"},
		{"/v1/messages", router.SurfaceMessages, false,
			`{"model":"claude-x","max_tokens":16,"metadata":{"user_id":"vip"},"stream":true,"tools":[{"name":"t"}],"messages":[{"role":"user","content":"hi"}]}`, "ant"},
		{"/v1/messages/count_tokens", router.SurfaceMessages, true,
			`{"model":"claude-x","metadata":{"user_id":"vip"},"messages":[{"role":"user","content":"hi"}]}`, "ant"},
	} {
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetMethod("POST")
		rc.Request.SetRequestURI(tc.path)
		rc.Request.Header.Set("X-Gateway-Metadata", `{"tier":"silver"}`)
		rc.Request.Header.Set("anthropic-version", "2023-06-01")
		rc.Request.SetBodyString(tc.body)
		sc := scratchPool.Get().(*scratch)
		run := func() {
			setRequestID(&rc)
			if !routeRequest(&rc, st, tc.surface, tc.count, sc) || len(sc.cands) == 0 || sc.cands[0].Name != tc.want || sc.rule != 0 {
				t.Fatalf("%s: routed to %d candidates, rule %d: %s", tc.path, len(sc.cands), sc.rule, rc.Response.Body())
			}
		}
		run()
		if n := testing.AllocsPerRun(200, run); n != 0 {
			t.Errorf("%s: routing allocates %v times per request, want 0", tc.path, n)
		}
	}
}

func TestPeekMessagesAllocatesNothing(t *testing.T) {
	body := []byte(`{"model":"claude-x","messages":[{"role":"user","content":"hello"}],` +
		`"metadata":{"user_id":"alice \"a\""},"stream":true,"tools":[{"name":"f"}],"max_tokens":64}`)
	p := &peek{}
	if err := p.parse(body, true); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if err := p.parse(body, true); err != nil || !p.Stream || !p.HasTools || string(p.User) != `alice "a"` {
			t.Fatal("parse failed", err)
		}
	}); n != 0 {
		t.Fatalf("peek allocates %v times per Messages body, want 0", n)
	}
}

// A whole proxied non-stream request on responses and on messages (and
// count_tokens) through Gateway.Handler allocates nothing, as on chat
// (TestHandlerAllocatesNothing).
func TestHandlerNewSurfacesAllocateNothing(t *testing.T) {
	ln := answeringUpstream(t, []byte(`{"id":"x","type":"message","content":[]}`))
	key := "sk-" + strings.Repeat("A1b2C3d4", 12)
	st, err := Build(mustParse(t, `
strategy:
  mode: conditional
  conditions:
    - {key: model_prefix, value: claude-, target_key: ant}
targets:
  - {virtual_key: oai, provider: openai, base_url: "http://`+ln.Addr().String()+`/v1", api_key: `+key+`}
  - virtual_key: ant
    provider: anthropic
    base_url: "http://`+ln.Addr().String()+`"
    api_key: `+key+`
    model_map: {claude-sonnet: claude-sonnet-4-5-20250929}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	g := New(st)
	g.Finished = func(*telemetry.Entry) {}
	for _, tc := range []struct{ path, body string }{
		{"/v1/responses", `{"model":"gpt-5","input":"hi","user":"u"}`},
		{"/v1/messages", `{"model":"claude-sonnet","max_tokens":8,"metadata":{"user_id":"u"},"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages/count_tokens", `{"model":"claude-sonnet","messages":[{"role":"user","content":"hi"}]}`},
	} {
		var req fasthttp.Request
		req.Header.SetMethod("POST")
		req.SetRequestURI(tc.path)
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("anthropic-beta", "b1")
		req.Header.Set("X-Gateway-Metadata", `{"tier":"gold"}`)
		req.SetBodyString(tc.body)
		var rc fasthttp.RequestCtx
		rc.Init(&req, nil, nil)
		run := func() {
			rc.Response.Reset()
			g.Handler(&rc)
			if rc.Response.StatusCode() != 200 {
				t.Fatalf("%s: status %d: %s", tc.path, rc.Response.StatusCode(), rc.Response.Body())
			}
		}
		for i := 0; i < 50; i++ {
			run()
		}
		if n := testing.AllocsPerRun(500, run); n != 0 {
			t.Errorf("%s: a proxied request allocates %v times, want 0", tc.path, n)
		}
	}
}
