package hotpath

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// fasthttp's refusals on a messages path are in Anthropic's envelope.
func TestServerErrorHandlerOnMessages(t *testing.T) {
	g := New(nil)
	for _, c := range []struct {
		path   string
		err    error
		status int
		body   string
	}{
		{"/v1/messages", fasthttp.ErrBodyTooLarge, 413, `{"type":"error","error":{"type":"invalid_request_error","message":"request body is too large; at most 10485760 bytes allowed"}}`},
		{"/v1/messages/count_tokens", fasthttp.ErrBodyTooLarge, 413, `{"type":"error","error":{"type":"invalid_request_error","message":"request body is too large; at most 10485760 bytes allowed"}}`},
		{"/v1/responses", fasthttp.ErrBodyTooLarge, 413, envelope("request body is too large; at most 10485760 bytes allowed", "invalid_request_error", "request_too_large")},
		{"/v1/messagesx", fasthttp.ErrBodyTooLarge, 413, envelope("request body is too large; at most 10485760 bytes allowed", "invalid_request_error", "request_too_large")},
	} {
		var rc fasthttp.RequestCtx
		rc.Request.SetRequestURI(c.path)
		g.errorHandler(&rc, c.err)
		if rc.Response.StatusCode() != c.status || string(rc.Response.Body()) != c.body {
			t.Errorf("%s %v: %d %s", c.path, c.err, rc.Response.StatusCode(), rc.Response.Body())
		}
	}
}

// antResponses is the anthropic member a Responses request reaches: none
// until responses has a translator to the chat form.
var antResponses = map[bool]string{true: "ant2"}[provider.TranslatedSurfaces().Has(router.SurfaceResponses)]

// What routeRequest hands the walk on the new surfaces: the user from
// metadata.user_id on messages (the top-level user ignored), count_tokens
// never a stream, the client's headers for the Messages pass-through only.
func TestRouteRequestNewSurfaces(t *testing.T) {
	st, err := Build(mustParse(t, `
strategy:
  mode: conditional
  conditions:
    - {key: user, value: vip, target_key: ant2}
    - {key: stream, value: "true", target_key: ant1}
targets:
  - {virtual_key: oai, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: k}
  - {virtual_key: ant1, provider: anthropic, base_url: "http://127.0.0.1:2", api_key: k}
  - {virtual_key: ant2, provider: anthropic, base_url: "http://127.0.0.1:3", api_key: k}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		surface router.Surface
		count   bool
		body    string
		rule    int
		target  string // "": refused 404 (no candidate serves the surface)
		stream  bool
	}{
		{router.SurfaceMessages, false, `{"model":"c","metadata":{"user_id":"vip"},"stream":true}`, 0, "ant2", true},
		{router.SurfaceMessages, false, `{"model":"c","user":"vip","stream":true}`, 1, "ant1", true},
		{router.SurfaceMessages, true, `{"model":"c","metadata":{"user_id":"vip"},"stream":true}`, 0, "ant2", false},
		// count_tokens routes as a non-stream request: no rule, fallback
		// oai (which answers it with the gateway's estimate).
		{router.SurfaceMessages, true, `{"model":"c","stream":true}`, -1, "oai", false},
		{router.SurfaceResponses, false, `{"model":"c","user":"vip","stream":true}`, 0, antResponses, true},
		{router.SurfaceResponses, false, `{"model":"c","metadata":{"user_id":"vip"}}`, -1, "oai", false},
	} {
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetMethod("POST")
		rc.Request.SetBodyString(c.body)
		sc := &scratch{}
		ok := routeRequest(&rc, st, c.surface, c.count, sc)
		if sc.rule != c.rule {
			t.Errorf("%v %s: rule %d, want %d", c.surface, c.body, sc.rule, c.rule)
		}
		if c.target == "" {
			if ok || rc.Response.StatusCode() != 404 {
				t.Errorf("%v %s: ok %v status %d, want 404", c.surface, c.body, ok, rc.Response.StatusCode())
			}
			continue
		}
		if !ok || sc.cands[0].Name != c.target || sc.call.Stream != c.stream || sc.call.CountTokens != c.count {
			t.Fatalf("%v %s: ok %v cands %v call %+v", c.surface, c.body, ok, sc.cands, sc.call)
		}
		if messages := c.surface == router.SurfaceMessages; (sc.call.Header == &rc.Request.Header) != messages {
			t.Errorf("%v: client header handed to the walk: %v", c.surface, sc.call.Header != nil)
		}
	}
}
