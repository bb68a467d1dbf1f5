package hotpath

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/valyala/fastjson"
)

// chainConfig routes model m to the chain [a, b, c]; the fallback d serves
// d-model only.
// Attempt timeouts are short so hang cases stay fast; breakers open after
// two counted failures.
const chainConfig = `
server:
  request_timeout: 3s
strategy:
  mode: conditional
  conditions:
    - key: model
      value: m
      target_keys: [a, b, c]
targets:
  - {virtual_key: d, provider: openai, base_url: "{{d}}", api_key: sk-d, models: [d-model]}
  - {virtual_key: a, provider: openai, base_url: "{{a}}", api_key: sk-a, timeout: 300ms, circuit_breaker: {failure_threshold: 2}}
  - {virtual_key: b, provider: openai, base_url: "{{b}}", api_key: sk-b, timeout: 300ms, circuit_breaker: {failure_threshold: 2}}
  - {virtual_key: c, provider: openai, base_url: "{{c}}", api_key: sk-c, timeout: 300ms, circuit_breaker: {failure_threshold: 2}}
`

func chainMocks(t *testing.T) (a, b, c, d *mockUpstream, all []*mockUpstream) {
	a, b, c, d = startMock(t, "a"), startMock(t, "b"), startMock(t, "c"), startMock(t, "d")
	return a, b, c, d, []*mockUpstream{a, b, c, d}
}

// errorCode returns the error envelope's type and code ("" if the body is
// not one).
func errorCode(body string) (typ, code string) {
	v, err := fastjson.Parse(body)
	if err != nil {
		return "", ""
	}
	return string(v.GetStringBytes("error", "type")), string(v.GetStringBytes("error", "code"))
}

func TestFailoverThroughTheHandler(t *testing.T) {
	const chat = "/v1/chat/completions"
	type step struct {
		faults      map[string]fault // faults of a, b, c for this request
		called      string           // upstreams called, in mock order a,b,c,d
		status      int
		target      string // X-Gateway-Target
		attempts    string
		typ, code   string // error envelope ("" on success)
		bodyContain string
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"503 moves to the next member", []step{
			{faults: map[string]fault{"a": fault503}, called: "a,b", status: 200, target: "b", attempts: "2", bodyContain: "hello from b"},
		}},
		{"429 moves on and parks the member", []step{
			{faults: map[string]fault{"a": fault429}, called: "a,b", status: 200, target: "b", attempts: "2", bodyContain: "hello from b"},
			// a is parked for its Retry-After (30 s): skipped without a call.
			{faults: map[string]fault{"a": faultNone}, called: "b", status: 200, target: "b", attempts: "1"},
		}},
		{"408, transport reset and context length move on", []step{
			{faults: map[string]fault{"a": fault408, "b": faultReset}, called: "a,b,c", status: 200, target: "c", attempts: "3", bodyContain: "hello from c"},
			{faults: map[string]fault{"a": faultContextLength}, called: "a,b", status: 200, target: "b", attempts: "2"},
		}},
		{"400 stops the walk", []step{
			{faults: map[string]fault{"a": fault400}, called: "a", status: 400, target: "a", attempts: "1",
				typ: "invalid_request_error", code: "invalid_value", bodyContain: "bad temperature from a"},
		}},
		{"401 stops the walk as 502", []step{
			{faults: map[string]fault{"a": fault401}, called: "a", status: 502, target: "a", attempts: "1",
				typ: "upstream_error", code: "upstream_auth_error"},
		}},
		{"last member's 503 is 502, then open circuits are 503", []step{
			{faults: map[string]fault{"a": fault503, "b": fault503, "c": fault503}, called: "a,b,c", status: 502, target: "c", attempts: "3",
				typ: "upstream_error", code: "upstream_error"},
			{faults: map[string]fault{"a": fault503, "b": fault503, "c": fault503}, called: "a,b,c", status: 502, target: "c", attempts: "3",
				typ: "upstream_error", code: "upstream_error"},
			// Two counted failures each: every circuit is open, nobody is called.
			{faults: map[string]fault{}, called: "", status: 503, attempts: "0",
				typ: "upstream_error", code: "upstream_unavailable"},
		}},
		{"last member's 429 is 429", []step{
			{faults: map[string]fault{"a": fault503, "b": fault503, "c": fault429}, called: "a,b,c", status: 429, target: "c", attempts: "3",
				typ: "rate_limit_error", code: "rate_limit_exceeded"},
		}},
		{"attempt timeouts end in 504", []step{
			{faults: map[string]fault{"a": faultHang, "b": faultHang, "c": faultHang}, called: "a,b,c", status: 504, target: "c", attempts: "3",
				typ: "upstream_error", code: "gateway_timeout"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b, cm, d, all := chainMocks(t)
			tg := startGateway(t, chainConfig, all...)
			for i, s := range c.steps {
				for _, m := range []*mockUpstream{a, b, cm} {
					m.setFault(s.faults[m.name])
				}
				before := callCounts(all)
				r := tg.do("POST", chat, `{"model":"m","messages":[]}`, "Authorization", "Bearer client-key")
				if got := calledSince(all, before); got != s.called {
					t.Errorf("step %d: called %q, want %q", i, got, s.called)
				}
				if r.Status != s.status || r.Header["X-Gateway-Attempts"] != s.attempts || r.Header["X-Gateway-Rule"] != "0" ||
					(s.target != "" && r.Header["X-Gateway-Target"] != s.target) {
					t.Errorf("step %d: %d target=%q attempts=%q rule=%q %s", i, r.Status, r.Header["X-Gateway-Target"],
						r.Header["X-Gateway-Attempts"], r.Header["X-Gateway-Rule"], r.Body)
				}
				if s.target != "" && (r.Header["X-Gateway-Provider"] != "openai" || r.Header["X-Gateway-Model"] != "m") {
					t.Errorf("step %d: provider=%q model=%q", i, r.Header["X-Gateway-Provider"], r.Header["X-Gateway-Model"])
				}
				if typ, code := errorCode(r.Body); typ != s.typ || code != s.code {
					t.Errorf("step %d: error type=%q code=%q, want %q %q: %s", i, typ, code, s.typ, s.code, r.Body)
				}
				if !strings.Contains(r.Body, s.bodyContain) {
					t.Errorf("step %d: body %s lacks %q", i, r.Body, s.bodyContain)
				}
				if r.Header["X-Request-Id"] == "" {
					t.Errorf("step %d: no X-Request-Id", i)
				}
			}
			noCalls(t, d)
		})
	}
}

func TestRequestTimeoutIs504(t *testing.T) {
	a, _, _, d, all := chainMocks(t)
	// One member with a long attempt timeout; the request deadline is
	// shorter and wins.
	tg := startGateway(t, `
server: {request_timeout: 300ms}
strategy: {mode: conditional, conditions: [{key: model, value: m, target_key: a}]}
targets:
  - {virtual_key: d, provider: openai, base_url: "{{d}}", api_key: sk-d, models: [d-model]}
  - {virtual_key: a, provider: openai, base_url: "{{a}}", api_key: sk-a, timeout: 10s}
`, all...)
	a.setFault(faultHang)
	start := time.Now()
	r := tg.do("POST", "/v1/chat/completions", `{"model":"m"}`)
	if typ, code := errorCode(r.Body); r.Status != 504 || typ != "upstream_error" || code != "gateway_timeout" {
		t.Errorf("%d %s", r.Status, r.Body)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("request took %v; the 300ms request timeout did not bound it", took)
	}
	noCalls(t, d)
}

func TestStreamThroughTheHandler(t *testing.T) {
	a, b, _, d, all := chainMocks(t)
	tg := startGateway(t, chainConfig, all...)
	a.setFault(fault503)
	r := tg.do("POST", "/v1/chat/completions", `{"model":"m","stream":true}`)
	if r.Status != 200 || r.Header["X-Gateway-Target"] != "b" || !strings.Contains(r.Body, `"content":"from b"`) ||
		!strings.HasSuffix(r.Body, "data: [DONE]\n\n") {
		t.Fatalf("%d %v\n%s", r.Status, r.Header, r.Body)
	}
	if ct := r.Header["Content-Type"]; !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content type %q", ct)
	}
	if b.calls.Load() != 1 {
		t.Errorf("b calls %d", b.calls.Load())
	}
	noCalls(t, d)
}

// TestOfficialClient points the unmodified openai-go client at the gateway.
func TestOfficialClient(t *testing.T) {
	a, b, _, d, all := chainMocks(t)
	tg := startGateway(t, chainConfig, all...)
	a.setFault(fault503) // every call fails over to b
	client := openai.NewClient(
		option.WithBaseURL("http://"+tg.addr+"/v1"),
		option.WithAPIKey("client-key"),
		option.WithMaxRetries(0),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(comp.Choices) != 1 || comp.Choices[0].Message.Content != "hello from b" {
		t.Fatalf("completion %+v", comp)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "hello from b" {
		t.Fatalf("streamed %+v", acc.Choices)
	}

	// Embeddings: model d is not in the chain's rule, so use the rule's
	// model; the chain serves embeddings (openai).
	emb, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "m",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.Data) != 1 || len(emb.Data[0].Embedding) != 2 || emb.Data[0].Embedding[0] != 0.5 {
		t.Fatalf("embeddings %+v", emb.Data)
	}

	// An upstream's own 400 through the client. a's circuit is open by now
	// (two 503s), so b answers it.
	b.setFault(fault400)
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if err == nil || !errorsAs(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "invalid_value" {
		t.Fatalf("want the upstream's 400 through the client, got %v", err)
	}

	for _, m := range all {
		for _, req := range m.requests() {
			if strings.Contains(req.Auth, "client-key") {
				t.Errorf("upstream %s saw the client's key", m.name)
			}
		}
	}
	if n := b.calls.Load(); n != 4 {
		t.Errorf("b got %d calls, want 4", n)
	}
	noCalls(t, d)
}
