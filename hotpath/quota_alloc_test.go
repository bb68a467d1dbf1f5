//go:build !race

package hotpath

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// TestHandlerWithLimitsAllocatesNothing is TestHandlerWithKeyAllocatesNothing
// with quotas on the memory store: the key's rate limits and budgets, the
// member's own limits, the rate-limit headers, the usage settlement and the
// spend cost no allocation.
func TestHandlerWithLimitsAllocatesNothing(t *testing.T) {
	ln := answeringUpstream(t, []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}`))
	cfg := mustParse(t, `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
targets:
  - virtual_key: a
    provider: openai
    base_url: "http://`+ln.Addr().String()+`/v1"
    limits: {requests_per_minute: 1000000000, tokens_per_minute: 1000000000000}
    prices: {gpt-4o: {input: 2.5, output: 10}}
auth:
  keys:
    - name: acme
      key: sy-acme-0123456789abcdef0123456789abcdef
      models: [gpt-4o]
      limits: {requests_per_minute: 1000000000, tokens_per_minute: 1000000000000, tokens_per_day: 1000000000000, spend_per_day_usd: 1000000}
`)
	st, err := Build(cfg, upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	st.Quota = quota.New(context.Background(), cfg, nil, zerolog.Nop()).Plan(cfg)
	g := New(st)
	var last telemetry.Entry
	g.Finished = func(e *telemetry.Entry) { last = *e }
	var req fasthttp.Request
	if err := parseRequest(t, &req, "/v1/chat/completions", "Authorization: Bearer sy-acme-0123456789abcdef0123456789abcdef\r\n",
		[]byte(`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)); err != nil {
		t.Fatal(err)
	}
	var rc fasthttp.RequestCtx
	rc.Init(&req, nil, nil)
	run := func() {
		rc.Response.Reset()
		g.Handler(&rc)
		if rc.Response.StatusCode() != 200 || len(rc.Response.Header.Peek("x-ratelimit-remaining-tokens")) == 0 {
			t.Fatalf("status %d: %s", rc.Response.StatusCode(), rc.Response.Body())
		}
	}
	for i := 0; i < 50; i++ {
		run()
	}
	if n := testing.AllocsPerRun(500, run); n != 0 {
		t.Fatalf("a request with limits allocates %v times, want 0", n)
	}
	// 5 × 2.5 + 7 × 10 micro-USD.
	if !last.HasSpend || last.Spend != 83 {
		t.Fatalf("record spend %d (%v); want 83 micro-USD", last.Spend, last.HasSpend)
	}
}
