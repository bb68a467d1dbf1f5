//go:build !race

package hotpath

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// TestHandlerAllocatesNothing covers a whole proxied non-stream request
// through Gateway.Handler: routing, the walk (build, send, read, answer),
// the X-Gateway-* headers and the Finished record, with a real-length base
// URL path, key and model_map. The upstream is a bare server answering a
// constant body, so it allocates nothing of its own.
func TestHandlerAllocatesNothing(t *testing.T) {
	ln := answeringUpstream(t, []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`))
	key := "sk-proj-" + strings.Repeat("A1b2C3d4", 20)
	st, err := Build(mustParse(t, `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
targets:
  - virtual_key: a
    provider: openai
    base_url: "http://`+ln.Addr().String()+`/openai/deployments/v1"
    api_key: `+key+`
    model_map: {gpt-4o: gpt-4o-2024-08-06}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	g := New(st)
	records := 0
	g.Finished = func(e *telemetry.Entry) { records++ }
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/chat/completions")
	req.Header.Set("X-Request-Id", "client-req-1")
	req.SetBodyString(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	var rc fasthttp.RequestCtx
	rc.Init(&req, nil, nil)
	run := func() {
		rc.Response.Reset() // as between two requests on a connection
		g.Handler(&rc)
		if rc.Response.StatusCode() != 200 || string(rc.Response.Header.Peek("X-Gateway-Model")) != "gpt-4o-2024-08-06" {
			t.Fatalf("status %d: %s", rc.Response.StatusCode(), rc.Response.Body())
		}
	}
	for i := 0; i < 50; i++ {
		run()
	}
	if n := testing.AllocsPerRun(500, run); n != 0 {
		t.Fatalf("a proxied request allocates %v times, want 0", n)
	}
	if records != 551 { // AllocsPerRun runs once more to warm up
		t.Fatalf("%d Finished records for 551 requests", records)
	}
}
