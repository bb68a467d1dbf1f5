package tracing_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard/switchyard/daemon"
	"github.com/switchyard/switchyard/mock"
)

// receiver is a test OTLP/HTTP collector: it keeps every span it is sent
// on /v1/traces.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	paths []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.paths = append(rc.paths, r.URL.Path)
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ = proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

func attrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		v := kv.Value
		switch {
		case v.GetStringValue() != "":
			m[kv.Key] = v.GetStringValue()
		case v.GetArrayValue() != nil:
			var parts []string
			for _, x := range v.GetArrayValue().Values {
				parts = append(parts, x.GetStringValue())
			}
			m[kv.Key] = strings.Join(parts, ",")
		default:
			m[kv.Key] = fmt.Sprint(v.GetIntValue())
		}
	}
	return m
}

const otlpConfig = `server:
  listen: 127.0.0.1:0
  shutdown_timeout: 5s
log: {level: warn, access_log: false}
tracing:
  otlp_endpoint: %s
  sample_ratio: 1
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: alpha}
    - {key: model_prefix, value: claude-, target_keys: [beta, alpha]}
targets:
  - {virtual_key: alpha, provider: openai, base_url: %s, api_key: sk-a}
  - {virtual_key: beta, provider: openai, base_url: %s, api_key: sk-b, retry: {attempts: 1}}
auth:
  keys:
    - {name: acme, key: sk-client-acme-0001}
`

// A test collector receives, over OTLP/HTTP, a server span per request
// with the GenAI attributes, parented on the client's traceparent, and a
// client span per upstream attempt under it; a failover shows both
// attempts, the failed one with an error status.
func TestSpansReachCollector(t *testing.T) {
	rcv := &receiver{}
	col := httptest.NewServer(rcv)
	defer col.Close()
	alpha, _ := mock.Start("127.0.0.1:0", mock.Options{Name: "alpha", APIKey: "sk-a"})
	defer alpha.Close()
	beta, _ := mock.Start("127.0.0.1:0", mock.Options{Name: "beta", APIKey: "sk-b"})
	defer beta.Close()
	beta.Fail(mock.Failure{Status: 503})

	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, otlpConfig, col.URL, alpha.BaseURL(), beta.BaseURL()), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(path, "127.0.0.1:0", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	base := "http://" + d.Addr().String()

	const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	send := func(model, id string, traceparent bool) {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
			strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer sk-client-acme-0001")
		req.Header.Set("X-Request-Id", id)
		if traceparent {
			req.Header.Set("Traceparent", "00-"+tid+"-"+sid+"-01")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", model, resp.StatusCode)
		}
	}
	send("gpt-4o", "req-plain", true)
	send("claude-sonnet-4-6", "req-failover", false)

	// Shutdown flushes the batch.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-served

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, p := range rcv.paths {
		if p != "/v1/traces" {
			t.Errorf("exported to %s; want /v1/traces", p)
		}
	}
	byReq := map[string]*tracepb.Span{}
	children := map[string][]*tracepb.Span{}
	for _, s := range rcv.spans {
		a := attrs(s)
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			byReq[a["switchyard.request_id"]] = s
		} else {
			children[string(s.ParentSpanId)] = append(children[string(s.ParentSpanId)], s)
		}
	}
	plain, fo := byReq["req-plain"], byReq["req-failover"]
	if plain == nil || fo == nil {
		t.Fatalf("request spans missing: got %d spans", len(rcv.spans))
	}

	// The traced request: its parent is the client's span.
	if got := fmt.Sprintf("%x", plain.TraceId); got != tid {
		t.Errorf("trace id %s, want the client's %s", got, tid)
	}
	if got := fmt.Sprintf("%x", plain.ParentSpanId); got != sid {
		t.Errorf("parent span %s, want the client's %s", got, sid)
	}
	a := attrs(plain)
	for k, want := range map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai",
		"switchyard.rule": "0", "switchyard.key": "acme", "switchyard.target": "alpha", "http.response.status_code": "200",
	} {
		if a[k] != want {
			t.Errorf("request span %s = %q, want %q", k, a[k], want)
		}
	}
	p, c := alpha.UsageFigures()
	if a["gen_ai.usage.input_tokens"] != fmt.Sprint(p) || a["gen_ai.usage.output_tokens"] != fmt.Sprint(c) {
		t.Errorf("usage %s/%s, want %d/%d", a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"], p, c)
	}
	if plain.Name != "chat gpt-4o" {
		t.Errorf("span name %q", plain.Name)
	}
	kids := children[string(plain.SpanId)]
	if len(kids) != 1 || attrs(kids[0])["switchyard.target"] != "alpha" || kids[0].Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Fatalf("attempt spans of the plain request: %v", kids)
	}

	// The failover: a new trace (no traceparent), two attempts in order,
	// the first failed.
	if fmt.Sprintf("%x", fo.TraceId) == tid || len(fo.ParentSpanId) != 0 {
		t.Errorf("the failover request has a parent: %x", fo.ParentSpanId)
	}
	a = attrs(fo)
	if a["switchyard.rule"] != "1" || a["switchyard.target"] != "alpha" || a["switchyard.walked"] != "beta,alpha" || a["switchyard.attempts"] != "2" {
		t.Errorf("failover span attributes %v", a)
	}
	kids = children[string(fo.SpanId)]
	if len(kids) != 2 {
		t.Fatalf("%d attempt spans for the failover, want 2", len(kids))
	}
	if kids[0].StartTimeUnixNano > kids[1].StartTimeUnixNano {
		kids[0], kids[1] = kids[1], kids[0]
	}
	k0, k1 := attrs(kids[0]), attrs(kids[1])
	if k0["switchyard.target"] != "beta" || k0["http.response.status_code"] != "503" || kids[0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("first attempt %v status %v; want beta, 503, error", k0, kids[0].Status)
	}
	if k1["switchyard.target"] != "alpha" || k1["switchyard.outcome"] != "ok" {
		t.Errorf("second attempt %v; want alpha ok", k1)
	}
	var failover bool
	for _, ev := range fo.Events {
		if ev.Name == "failover" {
			failover = true
		}
	}
	if !failover {
		t.Error("no failover event on the request span")
	}
	for _, s := range append(kids, fo, plain) {
		if s.EndTimeUnixNano < s.StartTimeUnixNano || s.StartTimeUnixNano == 0 {
			t.Errorf("span %s has times %d..%d", s.Name, s.StartTimeUnixNano, s.EndTimeUnixNano)
		}
	}
}
