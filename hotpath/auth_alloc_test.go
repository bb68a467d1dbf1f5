//go:build !race

package hotpath

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// TestHandlerWithKeyAllocatesNothing is TestHandlerAllocatesNothing with a
// client key: the header scan, the hash and lookup, the allow-list, the
// bound user and the metadata merge (a bound entry replacing the header's,
// another kept) all cost no allocation.
func TestHandlerWithKeyAllocatesNothing(t *testing.T) {
	ln := answeringUpstream(t, []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`))
	st, err := Build(mustParse(t, `
strategy:
  mode: conditional
  conditions:
    - {key: user, value: vip, target_key: b}
    - {key: metadata, field: region, value: eu, target_key: a}
targets:
  - {virtual_key: b, provider: openai, base_url: "http://`+ln.Addr().String()+`/v1"}
  - {virtual_key: a, provider: openai, base_url: "http://`+ln.Addr().String()+`/v1"}
auth:
  keys:
    - {name: other, sha256: `+digestOf("sy-other")+`}
    - name: acme
      key: sy-acme-0123456789abcdef0123456789abcdef
      user: acme
      metadata: {region: eu, tier: gold}
      models: [gpt-4o, "gpt-5*"]
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	g := New(st)
	var last telemetry.Entry
	g.Finished = func(e *telemetry.Entry) { last = *e }
	var req fasthttp.Request
	if err := parseRequest(t, &req, "/v1/chat/completions",
		"Authorization: Bearer sy-acme-0123456789abcdef0123456789abcdef\r\nX-Gateway-Metadata: {\"region\":\"us\",\"team\":\"x\"}\r\n",
		[]byte(`{"model":"gpt-4o","user":"vip","messages":[{"role":"user","content":"hi"}]}`)); err != nil {
		t.Fatal(err)
	}
	var rc fasthttp.RequestCtx
	rc.Init(&req, nil, nil)
	run := func() {
		rc.Response.Reset()
		g.Handler(&rc)
		// Bound region eu wins over the header's us, and the bound user
		// over the body's vip: rule 1, target a.
		if rc.Response.StatusCode() != 200 || string(rc.Response.Header.Peek("X-Gateway-Rule")) != "1" {
			t.Fatalf("status %d rule %s: %s", rc.Response.StatusCode(), rc.Response.Header.Peek("X-Gateway-Rule"), rc.Response.Body())
		}
	}
	for i := 0; i < 50; i++ {
		run()
	}
	if n := testing.AllocsPerRun(500, run); n != 0 {
		t.Fatalf("an authenticated request allocates %v times, want 0", n)
	}
	if last.Key != "acme" {
		t.Fatalf("record key %q; want acme", last.Key)
	}
	// The server's HeaderReceived checks the key of a body it would
	// otherwise pre-read in part (over earlyKeyCheckBytes) before that body.
	req.Header.SetContentLength(earlyKeyCheckBytes + 1)
	hr := func() {
		if g.headerReceived(&req.Header).MaxRequestBodySize == 0 || req.Header.ConnectionClose() {
			t.Fatal("headerReceived refused a valid key")
		}
	}
	if n := testing.AllocsPerRun(500, hr); n != 0 {
		t.Fatalf("headerReceived with a valid key allocates %v times, want 0", n)
	}
	// GET /v1/models with the key: its own prebuilt list.
	var mreq fasthttp.Request
	if err := parseRequest(t, &mreq, "/v1/models", "x-api-key: sy-acme-0123456789abcdef0123456789abcdef\r\n", nil); err != nil {
		t.Fatal(err)
	}
	mreq.Header.SetMethod("GET")
	var mrc fasthttp.RequestCtx
	mrc.Init(&mreq, nil, nil)
	models := func() {
		mrc.Response.Reset()
		g.Handler(&mrc)
		if mrc.Response.StatusCode() != 200 {
			t.Fatalf("/v1/models %d: %s", mrc.Response.StatusCode(), mrc.Response.Body())
		}
	}
	models()
	if n := testing.AllocsPerRun(200, models); n != 0 {
		t.Fatalf("/v1/models with a key allocates %v times, want 0", n)
	}
}
