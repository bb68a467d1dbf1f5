package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchyard/switchyard/daemon"
)

// The responses and messages surfaces (docs/api.md, The Responses API and the Anthropic Messages API) from the clients people
// run: the official OpenAI SDK's Responses client and the official
// Anthropic SDK, unmodified, through the gateway to recording mocks.

const (
	oa1Key  = "sk-oa1-target"
	oa2Key  = "sk-oa2-target"
	ant1Key = "sk-ant1-target"
	ant2Key = "sk-ant2-target"
)

// surfacesYAML pins both surfaces by the same rules: user (the body's user
// on responses, metadata.user_id on messages) vip → [ant2, oa2]; metadata
// tier gold → [ant2, oa2]; claude-* → [ant1, ant2]; gpt-* → [oa1, oa2];
// bedrock-only → the bedrock target, which serves both surfaces translated
// over Converse (messages natively for Claude ids only); its base URL
// refuses connections.
// Arguments: oa1, oa2 base URLs, ant1, ant2 roots.
const surfacesYAML = `server:
  listen: 127.0.0.1:0
  request_timeout: 10s
  max_request_bytes: 65536
log:
  level: error
  access_log: false
strategy:
  mode: conditional
  conditions:
    - {key: user, value: vip, target_keys: [ant2, oa2]}
    - {key: metadata, field: tier, value: gold, target_keys: [ant2, oa2]}
    - {key: model_prefix, value: claude-, target_keys: [ant1, ant2]}
    - {key: model_prefix, value: gpt-, target_keys: [oa1, oa2]}
    - {key: model, value: bedrock-only, target_key: bed}
targets:
  - {virtual_key: oa1, provider: openai, base_url: "%[1]s", api_key: ` + oa1Key + `, models: ["gpt-*"], timeout: 5s}
  - {virtual_key: oa2, provider: openai, base_url: "%[2]s", api_key: ` + oa2Key + `, models: ["gpt-*"], timeout: 5s}
  - virtual_key: ant1
    provider: anthropic
    base_url: "%[3]s"
    api_key: ` + ant1Key + `
    models: ["claude-*"]
    model_map: {claude-pinned: claude-sonnet-4-5-20250929}
    timeout: 5s
  - {virtual_key: ant2, provider: anthropic, base_url: "%[4]s", api_key: ` + ant2Key + `, models: ["claude-*"], timeout: 5s}
  - {virtual_key: bed, provider: bedrock, base_url: "http://127.0.0.1:1", api_key: b, region: us-east-1, models: [bedrock-only]}
`

// sent records the bodies a client sent to the gateway.
type sent struct {
	mu     sync.Mutex
	bodies [][]byte
	header http.Header // of the last request
	next   http.RoundTripper
}

func (s *sent) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, b)
		s.header = r.Header.Clone()
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	return s.next.RoundTrip(r)
}

func (s *sent) last(t *testing.T) []byte {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies) == 0 {
		t.Fatal("the client sent nothing")
	}
	return s.bodies[len(s.bodies)-1]
}

type surfEnv struct {
	oa1, oa2, ant1, ant2 *apiMock
	base                 string
	sent                 *sent
	oai                  openai.Client
	ant                  anthropic.Client
}

func newSurfEnv(t *testing.T) *surfEnv {
	t.Helper()
	e := &surfEnv{
		oa1:  startResponsesMock(t, "oa1", oa1Key),
		oa2:  startResponsesMock(t, "oa2", oa2Key),
		ant1: startMessagesMock(t, "ant1", ant1Key),
		ant2: startMessagesMock(t, "ant2", ant2Key),
	}
	path := filepath.Join(t.TempDir(), "switchyard.yaml")
	cfg := fmt.Sprintf(surfacesYAML, e.oa1.srv.URL+"/v1", e.oa2.srv.URL+"/v1", e.ant1.srv.URL, e.ant2.srv.URL)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	d, err := daemon.New(path, "127.0.0.1:0", logs)
	if err != nil {
		t.Fatalf("daemon.New: %v\n%s", err, logs)
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	e.base = "http://" + d.Addr().String()
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	e.sent = &sent{next: tr}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: e.sent}
	e.oai = openai.NewClient(option.WithBaseURL(e.base+"/v1"), option.WithAPIKey(clientKey),
		option.WithMaxRetries(0), option.WithHTTPClient(hc))
	// Claude Code's ANTHROPIC_BASE_URL is the gateway's root, like this.
	e.ant = anthropic.NewClient(aoption.WithBaseURL(e.base), aoption.WithAPIKey(clientKey),
		aoption.WithMaxRetries(0), aoption.WithHTTPClient(hc))
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return e
}

func (e *surfEnv) calls() [4]int { return [4]int{e.oa1.n(), e.oa2.n(), e.ant1.n(), e.ant2.n()} }

func (e *surfEnv) wantCalls(t *testing.T, want [4]int) {
	t.Helper()
	if got := e.calls(); got != want {
		t.Errorf("calls oa1, oa2, ant1, ant2 = %v, want %v", got, want)
	}
}

// wantForwarded checks what the upstream received: the client's body byte
// for byte, the target's credential alone.
func wantForwarded(t *testing.T, rq received, clientBody []byte, path string) {
	t.Helper()
	if rq.method != "POST" || rq.uri != path {
		t.Errorf("upstream got %s %s, want POST %s", rq.method, rq.uri, path)
	}
	if !bytes.Equal(rq.body, clientBody) {
		t.Errorf("body changed on the way:\n client   %s\n upstream %s", clientBody, rq.body)
	}
	for k, vs := range rq.header {
		for _, v := range vs {
			if strings.Contains(v, clientKey) {
				t.Errorf("the client's key reached the upstream in %s", k)
			}
		}
	}
	if rq.header.Get("X-Gateway-Metadata") != "" {
		t.Errorf("X-Gateway-Metadata forwarded")
	}
}

func messageParams(model string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     model,
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Salut"))},
	}
}

func responseParams(model string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi there")},
	}
}

func testCtxSurf(t *testing.T) context.Context { return testCtx(t) }

func TestResponsesSDK(t *testing.T) {
	e := newSurfEnv(t)
	var resp *http.Response
	r, err := e.oai.Responses.New(testCtxSurf(t), responseParams("gpt-4.1"), option.WithResponseInto(&resp),
		option.WithHeader("X-Gateway-Metadata", `{"tier":"silver"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.OutputText(); got != "Hello from GPT" {
		t.Errorf("output %q", got)
	}
	e.wantCalls(t, [4]int{1, 0, 0, 0})
	rq := e.oa1.last(t)
	wantForwarded(t, rq, e.sent.last(t), "/v1/responses")
	if got := rq.header.Get("Authorization"); got != "Bearer "+oa1Key {
		t.Errorf("Authorization %q", got)
	}
	if resp.Header.Get("X-Gateway-Target") != "oa1" || resp.Header.Get("X-Gateway-Rule") != "3" {
		t.Errorf("headers %v", resp.Header)
	}

	// Streaming, pinned by the body's user.
	p := responseParams("gpt-4.1")
	p.User = openai.String("vip")
	s := e.oai.Responses.NewStreaming(testCtxSurf(t), p)
	var text strings.Builder
	completed := false
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			completed = true
		}
	}
	if err := s.Err(); err != nil || !completed || text.String() != "Hello from GPT" {
		t.Errorf("stream: err %v completed %v text %q", err, completed, text.String())
	}
	_ = s.Close()
	e.wantCalls(t, [4]int{1, 1, 0, 0})
	wantForwarded(t, e.oa2.last(t), e.sent.last(t), "/v1/responses")
}

func TestMessagesSDK(t *testing.T) {
	e := newSurfEnv(t)
	var resp *http.Response
	m, err := e.ant.Messages.New(testCtxSurf(t), messageParams("claude-sonnet-4-5"), aoption.WithResponseInto(&resp),
		aoption.WithHeader("anthropic-beta", "fine-grained-tool-streaming-2025-05-14"),
		aoption.WithHeader("X-Gateway-Metadata", `{"tier":"silver"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || m.Content[0].Text != "Bonjour from Claude" {
		t.Errorf("content %+v", m.Content)
	}
	e.wantCalls(t, [4]int{0, 0, 1, 0})
	rq := e.ant1.last(t)
	wantForwarded(t, rq, e.sent.last(t), "/v1/messages")
	if rq.header.Get("x-api-key") != ant1Key || rq.header.Get("Authorization") != "" {
		t.Errorf("credentials x-api-key %q Authorization %q", rq.header.Get("x-api-key"), rq.header.Get("Authorization"))
	}
	if rq.header.Get("anthropic-version") != e.sent.header.Get("anthropic-version") || rq.header.Get("anthropic-beta") != "fine-grained-tool-streaming-2025-05-14" {
		t.Errorf("anthropic headers %q %q", rq.header.Get("anthropic-version"), rq.header.Get("anthropic-beta"))
	}
	for k := range rq.header {
		if strings.HasPrefix(strings.ToLower(k), "x-stainless") {
			t.Errorf("client header %s forwarded", k)
		}
	}
	if resp.Header.Get("X-Gateway-Target") != "ant1" || resp.Header.Get("X-Gateway-Provider") != "anthropic" {
		t.Errorf("headers %v", resp.Header)
	}

	// Streaming, pinned by metadata.user_id.
	p := messageParams("claude-sonnet-4-5")
	p.Metadata = anthropic.MetadataParam{UserID: anthropic.String("vip")}
	s := e.ant.Messages.NewStreaming(testCtxSurf(t), p)
	var acc anthropic.Message
	for s.Next() {
		if err := acc.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil || len(acc.Content) != 1 || acc.Content[0].Text != "Bonjour from Claude" || acc.StopReason != "end_turn" {
		t.Errorf("stream: err %v message %+v", err, acc)
	}
	_ = s.Close()
	e.wantCalls(t, [4]int{0, 0, 1, 1})
	wantForwarded(t, e.ant2.last(t), e.sent.last(t), "/v1/messages")

	// The metadata header pins too.
	if _, err := e.ant.Messages.New(testCtxSurf(t), messageParams("claude-sonnet-4-5"),
		aoption.WithHeader("X-Gateway-Metadata", `{"tier":"gold"}`)); err != nil {
		t.Fatal(err)
	}
	e.wantCalls(t, [4]int{0, 0, 1, 2})

	// count_tokens, model_map applied.
	n, err := e.ant.Messages.CountTokens(testCtxSurf(t), anthropic.MessageCountTokensParams{
		Model:    "claude-pinned",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Salut"))},
	})
	if err != nil || n.InputTokens != 42 {
		t.Fatalf("count_tokens: %v %+v", err, n)
	}
	rq = e.ant1.last(t)
	want := bytes.Replace(e.sent.last(t), []byte(`"claude-pinned"`), []byte(`"claude-sonnet-4-5-20250929"`), 1)
	wantForwarded(t, rq, want, "/v1/messages/count_tokens")
}

// anthropicErr returns the SDK's typed error, failing when err is not one.
func anthropicAPIError(t *testing.T, err error) *anthropic.Error {
	t.Helper()
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want an *anthropic.Error, got %v", err)
	}
	return ae
}

func TestMessagesSDKErrors(t *testing.T) {
	e := newSurfEnv(t)
	ctx := testCtxSurf(t)
	// The upstream's own 400: as it came, no failover.
	body := anthropicErr("invalid_request_error", "max_tokens: must be positive")
	e.ant1.then(jsonAnswer(400, body))
	_, err := e.ant.Messages.New(ctx, messageParams("claude-sonnet-4-5"))
	ae := anthropicAPIError(t, err)
	if ae.StatusCode != 400 || !strings.Contains(ae.RawJSON(), "max_tokens: must be positive") {
		t.Errorf("400: %d %s", ae.StatusCode, ae.RawJSON())
	}
	e.wantCalls(t, [4]int{0, 0, 1, 0})

	// Gateway-made errors, in Anthropic's envelope with their status.
	for _, tc := range []struct {
		model  string
		status int
		typ    string
	}{
		{"mistral-large", 404, "not_found_error"}, // fallback oa1 does not serve it: model_not_found
		{"bedrock-only", 502, "api_error"},        // bed serves messages translated (not a Claude id); its URL refuses: upstream failed
	} {
		_, err := e.ant.Messages.New(ctx, messageParams(tc.model))
		ae := anthropicAPIError(t, err)
		if ae.StatusCode != tc.status || string(ae.Type()) != tc.typ {
			t.Errorf("%s: %d %s", tc.model, ae.StatusCode, ae.RawJSON())
		}
	}
	e.wantCalls(t, [4]int{0, 0, 1, 0})

	// Every candidate fails: 502 api_error.
	e.ant1.then(jsonAnswer(500, `{}`))
	e.ant2.then(jsonAnswer(503, `{}`))
	_, err = e.ant.Messages.New(ctx, messageParams("claude-sonnet-4-5"))
	if ae := anthropicAPIError(t, err); ae.StatusCode != 502 || string(ae.Type()) != "api_error" {
		t.Errorf("502: %d %s", ae.StatusCode, ae.RawJSON())
	}
}

func TestMessagesRawErrors(t *testing.T) {
	e := newSurfEnv(t)
	for _, tc := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"GET", "/v1/messages", "", 405, `{"type":"error","error":{"type":"invalid_request_error","message":"method GET is not allowed on /v1/messages; use POST"}}`},
		{"GET", "/v1/messages/count_tokens", "", 405, `"type":"invalid_request_error"`},
		{"POST", "/v1/messages/batches", "{}", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"the message batch is not {\"requests\": [...]}: it has no requests"}}`},
		{"POST", "/v1/messages/batches/x/nowhere", "{}", 404, `{"type":"error","error":{"type":"not_found_error","message":"unknown path \"/v1/messages/batches/x/nowhere\""}}`},
		{"POST", "/v1/messages", `{"model":1}`, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"\"model\"`},
		{"POST", "/v1/messages", `{"model":"claude-x","metadata":{"user_id":7}}`, 400, `{"type":"error","error":{"type":"invalid_request_error","message":`},
		{"POST", "/v1/messages", `{"model":"claude-x","max_tokens":1,"pad":"` + strings.Repeat("x", 70000) + `"}`, 413, `{"type":"error","error":{"type":"invalid_request_error","message":"request body is too large`},
		{"POST", "/v1/responses", `{"model":1}`, 400, `","type":"invalid_request_error","param":null,"code":"invalid_request"}}`},
		// bed serves responses translated: the translation refuses a body
		// without input, in OpenAI's envelope, before any call.
		{"POST", "/v1/responses", `{"model":"bedrock-only"}`, 400, `{"error":{"message":"input must be a string or an array of items","type":"invalid_request_error","param":null,"code":"invalid_request"}}`},
	} {
		req, _ := http.NewRequest(tc.method, e.base+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		if tc.status == 413 {
			// The gateway answers an oversized body at once and closes the
			// connection: a client still writing the body may see a reset
			// before it reads the answer. With Expect the client waits for
			// the answer before sending any of the body.
			req.Header.Set("Expect", "100-continue")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %s\n want %d %s", tc.method, tc.path, resp.StatusCode, b, tc.status, tc.want)
		}
	}
	// The screen's refusals on a messages path are Anthropic-shaped too.
	req, _ := http.NewRequest("POST", e.base+"/v1/messages", strings.NewReader(`{"model":"claude-x"}`))
	req.Header.Set("Origin", "https://elsewhere.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.HasPrefix(string(b), `{"type":"error","error":{"type":"permission_error","message":`) {
		t.Errorf("Origin refusal: %d %s", resp.StatusCode, b)
	}
	e.wantCalls(t, [4]int{0, 0, 0, 0})
}

// Failover on messages: 529, 429 and 5xx answers, an overloaded first
// stream event, a context overflow; a 400 first event goes back.
func TestMessagesFailover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		first    step
		stream   bool
		failover bool
		status   int
	}{
		{"529", jsonAnswer(529, anthropicErr("overloaded_error", "Overloaded")), false, true, 0},
		{"429", jsonAnswer(429, anthropicErr("rate_limit_error", "slow")), false, true, 0},
		{"500", jsonAnswer(500, anthropicErr("api_error", "boom")), false, true, 0},
		{"prompt too long", jsonAnswer(400, anthropicErr("invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum")), false, true, 0},
		{"400", jsonAnswer(400, anthropicErr("invalid_request_error", "messages.0: bad")), false, false, 400},
		{"stream overloaded first event", messagesErrorEvent("overloaded_error", "Overloaded"), true, true, 0},
		{"stream prompt too long first event", messagesErrorEvent("invalid_request_error", "Prompt is too long"), true, true, 0},
		{"stream 529 answer", jsonAnswer(529, anthropicErr("overloaded_error", "Overloaded")), true, true, 0},
		{"stream invalid first event", messagesErrorEvent("invalid_request_error", "bad"), true, false, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newSurfEnv(t)
			e.ant1.then(tc.first)
			var err error
			text := ""
			if tc.stream {
				s := e.ant.Messages.NewStreaming(testCtxSurf(t), messageParams("claude-sonnet-4-5"))
				var acc anthropic.Message
				for s.Next() {
					_ = acc.Accumulate(s.Current())
				}
				err = s.Err()
				if len(acc.Content) > 0 {
					text = acc.Content[0].Text
				}
				_ = s.Close()
			} else {
				var m *anthropic.Message
				m, err = e.ant.Messages.New(testCtxSurf(t), messageParams("claude-sonnet-4-5"))
				if m != nil && len(m.Content) > 0 {
					text = m.Content[0].Text
				}
			}
			if tc.failover {
				if err != nil || text != "Bonjour from Claude" {
					t.Fatalf("err %v text %q", err, text)
				}
				e.wantCalls(t, [4]int{0, 0, 1, 1})
				wantForwarded(t, e.ant2.last(t), e.sent.last(t), "/v1/messages")
				return
			}
			if ae := anthropicAPIError(t, err); ae.StatusCode != tc.status || string(ae.Type()) != "invalid_request_error" {
				t.Errorf("%d %s", ae.StatusCode, ae.RawJSON())
			}
			e.wantCalls(t, [4]int{0, 0, 1, 0})
		})
	}
}

// A stream cut after its first bytes ends with Anthropic's error event,
// which the SDK raises as an error.
func TestMessagesStreamCut(t *testing.T) {
	e := newSurfEnv(t)
	e.ant1.then(messagesCut)
	s := e.ant.Messages.NewStreaming(testCtxSurf(t), messageParams("claude-sonnet-4-5"))
	var acc anthropic.Message
	for s.Next() {
		_ = acc.Accumulate(s.Current())
	}
	err := s.Err()
	_ = s.Close()
	if err == nil || !strings.Contains(err.Error(), "api_error") || len(acc.Content) != 1 || acc.Content[0].Text != "Bonjour" {
		t.Errorf("err %v, content %+v", err, acc.Content)
	}
	e.wantCalls(t, [4]int{0, 0, 1, 0}) // committed: no failover
}

func TestResponsesFailover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		first    step
		stream   bool
		failover bool
	}{
		{"429", jsonAnswer(429, `{"error":{"message":"slow","type":"requests","param":null,"code":"rate_limit_exceeded"}}`), false, true},
		{"502", jsonAnswer(502, `bad gateway`), false, true},
		{"context length", jsonAnswer(400, `{"error":{"message":"too long","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`), false, true},
		{"400", jsonAnswer(400, `{"error":{"message":"unknown parameter","type":"invalid_request_error","param":"foo","code":"unknown_parameter"}}`), false, false},
		{"stream response.failed first", responsesFirstEvent("response.failed", map[string]any{
			"response": map[string]any{"id": "r", "status": "failed", "error": map[string]any{"code": "server_error", "message": "down"}}}), true, true},
		{"stream error first", responsesFirstEvent("error", map[string]any{"code": "rate_limit_exceeded", "message": "slow", "param": nil}), true, true},
		{"stream invalid first", responsesFirstEvent("error", map[string]any{"error": map[string]any{
			"type": "invalid_request_error", "code": "invalid_value", "message": "bad value", "param": "input"}}), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newSurfEnv(t)
			e.oa1.then(tc.first)
			var err error
			text := ""
			if tc.stream {
				s := e.oai.Responses.NewStreaming(testCtxSurf(t), responseParams("gpt-4.1"))
				for s.Next() {
					if ev := s.Current(); ev.Type == "response.output_text.delta" {
						text += ev.Delta
					}
				}
				err = s.Err()
				_ = s.Close()
			} else {
				var r *responses.Response
				r, err = e.oai.Responses.New(testCtxSurf(t), responseParams("gpt-4.1"))
				if r != nil {
					text = r.OutputText()
				}
			}
			if tc.failover {
				if err != nil || text != "Hello from GPT" {
					t.Fatalf("err %v text %q", err, text)
				}
				e.wantCalls(t, [4]int{1, 1, 0, 0})
				wantForwarded(t, e.oa2.last(t), e.sent.last(t), "/v1/responses")
				return
			}
			ae := apiError(t, err)
			if ae.StatusCode != 400 || ae.Type != "invalid_request_error" {
				t.Errorf("%d %s", ae.StatusCode, ae.RawJSON())
			}
			e.wantCalls(t, [4]int{1, 0, 0, 0})
		})
	}
}

func TestResponsesStreamCut(t *testing.T) {
	e := newSurfEnv(t)
	e.oa1.then(responsesCut)
	s := e.oai.Responses.NewStreaming(testCtxSurf(t), responseParams("gpt-4.1"))
	text := ""
	for s.Next() {
		if ev := s.Current(); ev.Type == "response.output_text.delta" {
			text += ev.Delta
		}
	}
	err := s.Err()
	_ = s.Close()
	if err == nil || !strings.Contains(err.Error(), "upstream stream ended") || text != "Hello" {
		t.Errorf("err %v text %q", err, text)
	}
	e.wantCalls(t, [4]int{1, 0, 0, 0})
}

// /v1/models keeps its shape with the new surfaces configured (the router
// test TestModelsOnNewSurfaces covers a model routable on them alone).
func TestModelsWithNewSurfaces(t *testing.T) {
	e := newSurfEnv(t)
	page, err := e.oai.Models.List(testCtxSurf(t))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, m := range page.Data {
		ids[m.ID] = m.OwnedBy
	}
	if len(ids) != 2 || ids["claude-pinned"] != "anthropic" || ids["bedrock-only"] != "bedrock" || ids["mistral-large"] != "" {
		t.Errorf("models %v", ids)
	}
}

// Claude Code's way: ANTHROPIC_BASE_URL names the gateway's root and
// ANTHROPIC_AUTH_TOKEN goes out as a bearer token; the SDK picks both from
// the environment. The token reaches no upstream.
func TestMessagesFromEnvironment(t *testing.T) {
	e := newSurfEnv(t)
	t.Setenv("ANTHROPIC_BASE_URL", e.base)
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", clientKey)
	c := anthropic.NewClient(aoption.WithMaxRetries(0), aoption.WithHTTPClient(&http.Client{Transport: e.sent}))
	m, err := c.Messages.New(testCtxSurf(t), messageParams("claude-sonnet-4-5"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || m.Content[0].Text != "Bonjour from Claude" {
		t.Errorf("content %+v", m.Content)
	}
	rq := e.ant1.last(t)
	if rq.header.Get("x-api-key") != ant1Key || rq.header.Get("Authorization") != "" {
		t.Errorf("credentials x-api-key %q Authorization %q", rq.header.Get("x-api-key"), rq.header.Get("Authorization"))
	}
	if got := e.sent.header.Get("Authorization"); got != "Bearer "+clientKey {
		t.Errorf("the SDK sent Authorization %q; the test expects the bearer form", got)
	}
	wantForwarded(t, rq, e.sent.last(t), "/v1/messages")
}

// Claude Code posts to /v1/messages?beta=true: the path routes, and the
// query string, like every client header but the two anthropic ones, stays
// behind.
func TestMessagesBetaQuery(t *testing.T) {
	e := newSurfEnv(t)
	body := `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequest("POST", e.base+"/v1/messages?beta=true", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clientKey)
	req.Header.Set("anthropic-beta", "claude-code-20250219,oauth-2025-04-20")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Bonjour from Claude") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	rq := e.ant1.last(t)
	wantForwarded(t, rq, []byte(body), "/v1/messages")
	if rq.header.Get("anthropic-beta") != "claude-code-20250219,oauth-2025-04-20" || rq.header.Get("anthropic-version") != "2023-06-01" {
		t.Errorf("anthropic headers %q %q", rq.header.Get("anthropic-beta"), rq.header.Get("anthropic-version"))
	}
}
