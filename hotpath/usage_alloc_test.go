//go:build !race

package hotpath

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// A proxied request carrying a W3C traceparent, answered with a usage,
// counted in the token metrics and logged with its trace id and token
// fields, allocates nothing either.
func TestHandlerWithUsageAndTraceAllocatesNothing(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":21,"total_tokens":29}}`)
	var forwarded []byte
	srv := &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) {
		forwarded = append(forwarded[:0], rc.Request.Header.Peek("traceparent")...)
		rc.SetBody(answer)
	}}
	go srv.Serve(ln) //nolint:errcheck // ends at Shutdown
	t.Cleanup(func() { _ = srv.Shutdown() })
	st, err := Build(mustParse(t, `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
targets:
  - virtual_key: a
    provider: openai
    base_url: "http://`+ln.Addr().String()+`/v1"
    api_key: sk-a
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	g := New(st)
	m := telemetry.NewMetrics()
	m.SetTargets(st.Targets)
	access := telemetry.NewAccessLog(zerolog.New(io.Discard))
	var last telemetry.Entry
	g.Finished = func(e *telemetry.Entry) {
		last = telemetry.Entry{Usage: e.Usage, Target: e.Target}
		if string(e.TraceID) != parent[3:35] {
			t.Errorf("entry trace id %q", e.TraceID)
		}
		m.Finished(e)
		access.Log(e)
	}
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/chat/completions")
	req.Header.Set("traceparent", parent)
	req.SetBodyString(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	var rc fasthttp.RequestCtx
	rc.Init(&req, nil, nil)
	run := func() {
		rc.Response.Reset()
		g.Handler(&rc)
		if rc.Response.StatusCode() != 200 {
			t.Fatalf("status %d: %s", rc.Response.StatusCode(), rc.Response.Body())
		}
	}
	for i := 0; i < 50; i++ {
		run()
	}
	if n := testing.AllocsPerRun(500, run); n != 0 {
		t.Fatalf("a proxied request with usage and trace context allocates %v times, want 0", n)
	}
	want := upstream.Usage{Prompt: 8, Completion: 21, HasPrompt: true, HasCompletion: true}
	if last.Usage != want || last.Target != "a" {
		t.Fatalf("entry %+v", last)
	}
	if string(forwarded) != parent {
		t.Fatalf("upstream got traceparent %q", forwarded)
	}
}
