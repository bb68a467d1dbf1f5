package hotpath

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// baseConfig routes gpt-4o to a, claude- to [b, c], and leaves a as the
// fallback. Bodies over 2048 bytes are refused.
const baseConfig = `
server:
  max_request_bytes: 2048
  request_timeout: 5s
strategy:
  mode: conditional
  conditions:
    - key: model
      value: gpt-4o
      target_key: a
    - key: model_prefix
      value: claude-
      target_keys: [b, c]
targets:
  - virtual_key: a
    provider: openai
    base_url: {{a}}
    api_key: sk-a
    models: [gpt-4o, "gpt-5*", text-embedding-3-small]
  - virtual_key: b
    provider: anthropic
    base_url: {{b}}
    api_key: sk-b
    models: ["claude-*"]
  - virtual_key: c
    provider: openai
    base_url: {{c}}
    api_key: sk-c
    models: ["claude-*", other-model]
`

func threeMocks(t *testing.T) (a, b, c *mockUpstream) {
	return startMock(t, "a"), startMock(t, "b"), startMock(t, "c")
}

func noCalls(t *testing.T, ms ...*mockUpstream) {
	t.Helper()
	for _, m := range ms {
		if n := m.calls.Load(); n != 0 {
			t.Errorf("upstream %s got %d calls, want none", m.name, n)
		}
	}
}

func wantResponse(t *testing.T, what string, got response, status int, body string) {
	t.Helper()
	if got.Status != status || got.Body != body {
		t.Errorf("%s: got %d %s\nwant %d %s", what, got.Status, got.Body, status, body)
	}
}

func TestOwnEndpoints(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)

	r := tg.do("GET", "/healthz", "")
	wantResponse(t, "healthz", r, 200, "ok\n")
	r = tg.do("GET", "/readyz", "")
	wantResponse(t, "readyz", r, 200, "ready\n")
	r = tg.do("HEAD", "/readyz", "")
	if r.Status != 200 {
		t.Errorf("HEAD /readyz: %d", r.Status)
	}

	tg.g.SetDraining(true)
	wantResponse(t, "readyz draining", tg.do("GET", "/readyz", ""), 503, "draining\n")
	wantResponse(t, "healthz draining", tg.do("GET", "/healthz", ""), 200, "ok\n")
	tg.g.SetDraining(false)
	wantResponse(t, "readyz after drain cleared", tg.do("GET", "/readyz", ""), 200, "ready\n")

	wantResponse(t, "metrics without hook", tg.do("GET", "/metrics", ""), 404,
		envelope("metrics are not enabled", "invalid_request_error", "not_found"))
	noCalls(t, a, b, c)
	if r.Header["Server"] != "" {
		t.Errorf("Server header %q sent", r.Header["Server"])
	}
}

func TestMetricsHook(t *testing.T) {
	a := startMock(t, "a")
	tg := startGateway(t, `
strategy: {mode: conditional, conditions: [{key: model, value: m, target_key: a}]}
targets: [{virtual_key: a, provider: openai, base_url: "{{a}}", api_key: k}]
`, a)
	tg.g.Metrics = func(rc *fasthttp.RequestCtx) { rc.SetBodyString("requests_total 7\n") }
	wantResponse(t, "metrics", tg.do("GET", "/metrics", ""), 200, "requests_total 7\n")
	r := tg.do("POST", "/metrics", "")
	wantResponse(t, "POST /metrics", r, 405,
		envelope("method POST is not allowed on /metrics; use GET, HEAD", "invalid_request_error", "method_not_allowed"))
}

func TestNoStateLoaded(t *testing.T) {
	g := New(nil)
	srv := NewServer(g, nil, false)
	for _, c := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/readyz", 503, "no configuration loaded\n"},
		{"GET", "/healthz", 200, "ok\n"},
		{"GET", "/v1/models", 503, envelope("the gateway has no configuration loaded", "upstream_error", "upstream_unavailable")},
		{"POST", "/v1/chat/completions", 503, envelope("the gateway has no configuration loaded", "upstream_error", "upstream_unavailable")},
	} {
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetMethod(c.method)
		rc.Request.SetRequestURI(c.path)
		rc.Request.SetBodyString(`{"model":"m"}`)
		srv.Handler(&rc)
		if rc.Response.StatusCode() != c.status || string(rc.Response.Body()) != c.body {
			t.Errorf("%s %s: %d %s", c.method, c.path, rc.Response.StatusCode(), rc.Response.Body())
		}
	}
}

func TestUnknownPathAndWrongMethod(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	for _, p := range []string{"/", "/v1", "/v1/chat/completions/", "/v1/response", "/V1/models", "/v1/models/gpt-4o"} {
		r := tg.do("GET", p, "")
		wantResponse(t, p, r, 404, envelope("unknown path "+`"`+p+`"`, "invalid_request_error", "not_found"))
		if r.Header["Content-Type"] != "application/json" {
			t.Errorf("%s: content type %q", p, r.Header["Content-Type"])
		}
	}
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/v1/chat/completions", "POST"},
		{"PUT", "/v1/completions", "POST"},
		{"DELETE", "/v1/embeddings", "POST"},
		{"GET", "/v1/images/generations", "POST"},
		{"POST", "/v1/models", "GET, HEAD"},
		{"POST", "/healthz", "GET, HEAD"},
		{"DELETE", "/readyz", "GET, HEAD"},
	} {
		r := tg.do(c.method, c.path, "")
		wantResponse(t, c.method+" "+c.path, r, 405, envelope("method "+c.method+" is not allowed on "+c.path+"; use "+c.allow,
			"invalid_request_error", "method_not_allowed"))
		if r.Header["Allow"] != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, r.Header["Allow"], c.allow)
		}
	}
	noCalls(t, a, b, c)
}

func TestModelsList(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	// gpt-4o and text-embedding-3-small route to a (rule 0 / fallback),
	// other-model is only on c, which only a claude- rule reaches: hidden.
	want := `{"object":"list","data":[` +
		`{"id":"gpt-4o","object":"model","created":1700000000,"owned_by":"openai"},` +
		`{"id":"text-embedding-3-small","object":"model","created":1700000000,"owned_by":"openai"}]}`
	r := tg.do("GET", "/v1/models", "")
	wantResponse(t, "models", r, 200, want)
	if r.Header["Content-Type"] != "application/json" {
		t.Errorf("content type %q", r.Header["Content-Type"])
	}

	// A config whose fallback serves nothing exact lists nothing: data is
	// [], never null.
	tg.reload(`
strategy: {mode: conditional, conditions: [{key: model_prefix, value: x, target_key: a}]}
targets: [{virtual_key: a, provider: openai, base_url: "{{a}}", api_key: k, models: ["x*"]}]
`, a)
	wantResponse(t, "empty models", tg.do("GET", "/v1/models", ""), 200, `{"object":"list","data":[]}`)
	noCalls(t, a, b, c)
}

func TestBadBodies(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	bad := func(msg string) string { return envelope(msg, "invalid_request_error", "invalid_request") }
	for _, c := range []struct{ name, body, want string }{
		{"empty", ``, bad(`request body is empty; want a JSON object with a "model" field`)},
		{"array", `[{"model":"gpt-4o"}]`, bad(`request body must be a JSON object, not an array`)},
		{"model number", `{"model":4}`, bad(`"model" must be a string, not a number`)},
		{"no model", `{"messages":[]}`, bad(`request body has no "model"; it must name the model as a string`)},
		{"stream string", `{"model":"gpt-4o","stream":"true"}`, bad(`"stream" must be a boolean, not a string`)},
		{"user number", `{"model":"gpt-4o","user":1}`, bad(`"user" must be a string, not a number`)},
		{"tools object", `{"model":"gpt-4o","tools":{}}`, bad(`"tools" must be an array, not an object`)},
	} {
		for _, path := range []string{"/v1/chat/completions", "/v1/embeddings"} {
			r := tg.do("POST", path, c.body)
			wantResponse(t, c.name+" "+path, r, 400, c.want)
			if r.Header["X-Request-Id"] == "" {
				t.Errorf("%s: no X-Request-Id", c.name)
			}
			if _, ok := r.Header["X-Gateway-Rule"]; ok {
				t.Errorf("%s: X-Gateway-Rule set on a request that was never routed", c.name)
			}
		}
	}
	// Trailing bytes: the message names the offset; check the start.
	r := tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o"} {}`)
	if r.Status != 400 || !strings.HasPrefix(r.Body, `{"error":{"message":"request body is not valid JSON: `) ||
		!strings.HasSuffix(r.Body, `","type":"invalid_request_error","param":null,"code":"invalid_request"}}`) {
		t.Errorf("trailing bytes: %d %s", r.Status, r.Body)
	}
	noCalls(t, a, b, c)
}

// A body nested millions deep used to overflow the goroutine's stack in
// fastjson.Validate's recursion: a fatal error no recover catches, the
// whole gateway gone for one request. It is a 400 now, and the gateway
// keeps serving.
func TestDeeplyNestedBodyIsRefused(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, strings.Replace(baseConfig, "max_request_bytes: 2048", "max_request_bytes: 12582912", 1), a, b, c)
	for _, body := range []string{
		`{"model":"gpt-4o","messages":` + strings.Repeat("[", 5<<20),
		`{"model":"gpt-4o","messages":` + strings.Repeat("[", 5<<20) + strings.Repeat("]", 5<<20) + `}`,
		`{"model":"gpt-4o","metadata":` + strings.Repeat(`{"a":`, 2<<20),
	} {
		r := tg.do("POST", "/v1/chat/completions", body)
		wantResponse(t, "deep body", r, 400, `{"error":{"message":"request body is not valid JSON: arrays and objects are nested more than 300 deep","type":"invalid_request_error","param":null,"code":"invalid_request"}}`)
	}
	// A top level that is not an object is refused at its first byte.
	r := tg.do("POST", "/v1/chat/completions", strings.Repeat("[", 5<<20)+strings.Repeat("]", 5<<20))
	wantResponse(t, "deep array body", r, 400, `{"error":{"message":"request body must be a JSON object, not an array","type":"invalid_request_error","param":null,"code":"invalid_request"}}`)
	if r := tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o"}`); r.Status != 200 {
		t.Fatalf("after the deep bodies: %d %s", r.Status, r.Body)
	}
}

func TestBodyTooLarge(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	want := envelope("request body is too large; at most 2048 bytes allowed", "invalid_request_error", "request_too_large")
	big := `{"model":"gpt-4o","pad":"` + strings.Repeat("x", 2048) + `"}`
	wantResponse(t, "over the limit", tg.do("POST", "/v1/chat/completions", big), 413, want)

	// The limit follows a reload, both ways.
	tg.reload(strings.Replace(baseConfig, "max_request_bytes: 2048", "max_request_bytes: 4096", 1), a, b, c)
	if r := tg.do("POST", "/v1/chat/completions", big); r.Status != 200 {
		t.Errorf("after raising the limit: %d %s", r.Status, r.Body)
	}
	tg.reload(strings.Replace(baseConfig, "max_request_bytes: 2048", "max_request_bytes: 1024", 1), a, b, c)
	wantResponse(t, "after lowering the limit", tg.do("POST", "/v1/chat/completions", big), 413,
		envelope("request body is too large; at most 1024 bytes allowed", "invalid_request_error", "request_too_large"))
	if n := a.calls.Load(); n != 1 {
		t.Errorf("upstream a got %d calls, want 1 (the request under the raised limit)", n)
	}
	noCalls(t, b, c)
}

func TestBodyTooLargeCheckedAgainstRoutingState(t *testing.T) {
	// HeaderReceived and the handler load the State separately; a reload in
	// between must still hold the body to the State the request routes on.
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	st := tg.g.Load()
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod("POST")
	rc.Request.SetRequestURI("/v1/chat/completions")
	rc.Request.SetBodyString(`{"model":"gpt-4o","pad":"` + strings.Repeat("x", st.maxRequestBytes) + `"}`)
	tg.g.Handler(&rc)
	if rc.Response.StatusCode() != 413 {
		t.Fatalf("got %d %s", rc.Response.StatusCode(), rc.Response.Body())
	}
	noCalls(t, a, b, c)
}

func TestServerErrorHandler(t *testing.T) {
	g := New(nil)
	for _, c := range []struct {
		err    error
		status int
		body   string
	}{
		{fasthttp.ErrBodyTooLarge, 413, envelope("request body is too large; at most 10485760 bytes allowed", "invalid_request_error", "request_too_large")},
		{&fasthttp.ErrSmallBuffer{}, 431, envelope("request headers are too large", "invalid_request_error", "invalid_request")},
	} {
		var rc fasthttp.RequestCtx
		g.errorHandler(&rc, c.err)
		if rc.Response.StatusCode() != c.status || string(rc.Response.Body()) != c.body {
			t.Errorf("%v: %d %s", c.err, rc.Response.StatusCode(), rc.Response.Body())
		}
	}
}

func TestMalformedHTTPRequest(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	// A raw request with a broken Content-Length reaches the ErrorHandler.
	conn, err := netDial(tg.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n"))
	var resp fasthttp.Response
	if err := resp.Read(bufioReader(conn)); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != 400 || !strings.HasPrefix(string(resp.Body()), `{"error":{"message":"malformed or conflicting Content-Length`) {
		t.Errorf("got %d %s", resp.StatusCode(), resp.Body())
	}
	noCalls(t, a, b, c)
}

func TestBodyLimitAppliedBeforeTheBodyIsRead(t *testing.T) {
	// The State's limit (2048; the server's own cap is 10 MiB) stops a
	// Content-Length over it before the body is read. With
	// reduce_memory_usage fasthttp reads bodies itself and refuses from the
	// headers alone (HeaderReceived passes it the limit). Otherwise bodies
	// stream: fasthttp first pre-reads min(limit, 8 KiB) of it, then the
	// handler refuses without reading the rest. Either way the client gets
	// its 413 before it has sent the whole body.
	a, b, c := threeMocks(t)
	for _, tc := range []struct {
		name, config string
		sent         int // body bytes the client sends of the 5000 it declares
	}{
		{"reduce_memory_usage", strings.Replace(baseConfig, "server:\n", "server:\n  reduce_memory_usage: true\n", 1), 0},
		{"default", baseConfig, 2048},
	} {
		tg := startGateway(t, tc.config, a, b, c)
		conn, err := netDial(tg.addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n" +
			strings.Repeat("x", tc.sent)))
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		var resp fasthttp.Response
		if err := resp.Read(bufioReader(conn)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		conn.Close()
		want := envelope("request body is too large; at most 2048 bytes allowed", "invalid_request_error", "request_too_large")
		if resp.StatusCode() != 413 || string(resp.Body()) != want {
			t.Errorf("%s: got %d %s", tc.name, resp.StatusCode(), resp.Body())
		}
	}
	noCalls(t, a, b, c)
}
