//go:build !race

package hotpath

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// TestHeadReadersAllocateNothing: a request parsed from the wire, with
// every field the one header-section pass records (Origin, client key,
// metadata, traceparent and tracestate, Content-Length), served by a
// Gateway told its listener is loopback-bound, routes on its metadata,
// forwards its trace context, logs its trace id and allocates nothing.
func TestHeadReadersAllocateNothing(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var gotParent, gotState []byte
	srv := &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) {
		gotParent = append(gotParent[:0], rc.Request.Header.Peek("traceparent")...)
		gotState = append(gotState[:0], rc.Request.Header.Peek("tracestate")...)
		rc.SetBodyString(`{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`)
	}}
	go srv.Serve(ln) //nolint:errcheck // ends at Shutdown
	t.Cleanup(func() { _ = srv.Shutdown() })
	st, err := Build(mustParse(t, `
server:
  allowed_hosts: [gw.internal]
  allowed_origins: ["https://app.example.com"]
strategy:
  mode: conditional
  conditions:
    - {key: metadata, field: team, value: search, target_key: b}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: k}
  - {virtual_key: b, provider: openai, base_url: "http://`+ln.Addr().String()+`/v1", api_key: k}
auth: {keys: [{name: k1, key: sy-k1, metadata: {tier: gold}}]}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	g := New(st)
	g.SetListenAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080})
	var traceID []byte
	g.Finished = func(e *telemetry.Entry) { traceID = append(traceID[:0], e.TraceID...) }
	var req fasthttp.Request
	if err := parseRequest(t, &req, "/v1/chat/completions",
		"Host: gw.internal\r\nOrigin: https://app.example.com\r\nAuthorization: Bearer sy-k1\r\n"+
			"X-Gateway-Metadata: {\"team\":\"search\"}\r\ntraceparent: "+parent+"\r\ntracestate: a=1\r\n",
		[]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)); err != nil {
		t.Fatal(err)
	}
	var rc fasthttp.RequestCtx
	rc.Init2(nonLoopbackConnStub{}, nil, false) // the listener's answer, not the connection's, decides
	req.CopyTo(&rc.Request)
	run := func() {
		rc.Response.Reset()
		g.Handler(&rc)
		if rc.Response.StatusCode() != 200 || string(rc.Response.Header.Peek("X-Gateway-Rule")) != "0" {
			t.Fatalf("status %d rule %q: %s", rc.Response.StatusCode(), rc.Response.Header.Peek("X-Gateway-Rule"), rc.Response.Body())
		}
	}
	for range 50 {
		run()
	}
	if n := testing.AllocsPerRun(500, run); n != 0 {
		t.Fatalf("a request read in one header pass allocates %v times, want 0", n)
	}
	if string(gotParent) != parent || string(gotState) != "a=1" || string(traceID) != parent[3:35] {
		t.Fatalf("upstream got traceparent %q tracestate %q; logged trace id %q", gotParent, gotState, traceID)
	}
	// The same request with a foreign Host: the loopback listener refuses it.
	rc.Request.Header.SetHost("rebind.evil.example")
	rc.Response.Reset()
	g.Handler(&rc)
	if rc.Response.StatusCode() != 403 {
		t.Fatalf("foreign Host on a loopback listener: %d %s", rc.Response.StatusCode(), rc.Response.Body())
	}
}
