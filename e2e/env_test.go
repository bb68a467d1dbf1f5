package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/daemon"
)

// Credentials of the test: each target's own key, and the key the client
// presents to the gateway (which must reach no upstream).
const (
	clientKey    = "client-secret-key"
	openaiKey    = "sk-openai-target-key"
	euKey        = "sk-eu-target-key"
	anthropicKey = "sk-ant-target-key"
	bedrockKey   = "bedrock-target-api-key"

	// bedrockModelID is the model_map of claude-sonnet-4-6 on bedrock; the
	// ':' travels escaped in the path.
	bedrockModelID  = "anthropic.claude-sonnet-4-6-v1:0"
	bedrockEscaped  = "anthropic.claude-sonnet-4-6-v1%3A0"
	openaiPinnedID  = "gpt-4o-2024-08-06"
	claudeModel     = "claude-sonnet-4-6"
	unmatchedModel  = "mistral-large"
	sharedModel     = "gpt-4o-mini" // served by openai and eu; no model rule
	retryAfterParks = "30"          // seconds anthropic stays parked after its 429
)

// configYAML is the README's worked example with every target pointed at a
// local mock: model gpt-4o → openai; model_prefix claude- → [anthropic,
// bedrock]; user vip → openai; metadata tier gold → eu. eu also serves
// mistral-large, which no rule names. Arguments: openai base URL,
// anthropic root, bedrock root, eu base URL, the anthropic target's
// settings after models, openai's models, log.level.
const configYAML = `server:
  listen: 127.0.0.1:0
  request_timeout: 10s
  shutdown_timeout: 5s
log:
  level: %[7]s
  format: json
  access_log: true
strategy:
  mode: conditional
  conditions:
    - key: model
      value: gpt-4o
      target_key: openai
    - key: model_prefix
      value: claude-
      target_keys: [anthropic, bedrock]
    - key: user
      value: vip
      target_key: openai
    - key: metadata
      field: tier
      value: gold
      target_key: eu
targets:
  - virtual_key: openai
    provider: openai
    base_url: %[1]s
    api_key: ` + openaiKey + `
    models: %[6]s
    model_map:
      gpt-4o: ` + openaiPinnedID + `
    timeout: 5s
  - virtual_key: anthropic
    provider: anthropic
    base_url: %[2]s
    api_key: ` + anthropicKey + `
    models: ["claude-*"]
%[5]s
  - virtual_key: bedrock
    provider: bedrock
    base_url: %[3]s
    api_key: ` + bedrockKey + `
    region: us-east-1
    models: [claude-sonnet-4-6]
    model_map:
      claude-sonnet-4-6: "` + bedrockModelID + `"
    timeout: 5s
  - virtual_key: eu
    provider: openai
    base_url: %[4]s
    api_key: ` + euKey + `
    models: [gpt-4o, gpt-4o-mini, ` + unmatchedModel + `]
    timeout: 5s
`

// syncBuffer is a log sink safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env is one gateway in front of its four mock upstreams. Every test gets
// its own, so circuit, park and queue state never leak between tests.
type env struct {
	openai, eu *openaiMock
	anth       *anthropicMock
	bed        *bedrockMock
	base       string // the gateway's root URL, http://127.0.0.1:PORT
	client     openai.Client
	http       *http.Client
	logs       *syncBuffer
	d          *daemon.Daemon
	path       string // the configuration file
}

// envOptions change the worked example for one test.
type envOptions struct {
	// anthropic is the anthropic target's YAML after its models line, each
	// line indented four spaces. Default "    timeout: 5s".
	anthropic string
	// openaiModels is the openai target's models list. Default
	// "[gpt-4o, gpt-4o-mini]".
	openaiModels string
	// logLevel is log.level. Default info.
	logLevel string
	// auth is YAML appended to the config (an auth block). Default none:
	// the gateway is open.
	auth string
}

// newEnv starts the worked example.
func newEnv(t *testing.T) *env { return newEnvWith(t, envOptions{}) }

// newEnvWith starts the worked example changed by o: the four mocks, then
// the daemon, drained at the end of the test.
func newEnvWith(t *testing.T, o envOptions) *env {
	t.Helper()
	e := &env{
		openai: startOpenAIMock(t, "openai-mock", openaiKey),
		eu:     startOpenAIMock(t, "eu-mock", euKey),
		anth:   startAnthropicMock(t, anthropicKey),
		bed:    startBedrockMock(t, bedrockKey),
		logs:   &syncBuffer{},
	}
	e.path = filepath.Join(t.TempDir(), "switchyard.yaml")
	e.writeConfig(t, o)
	d, err := daemon.New(e.path, "127.0.0.1:0", e.logs)
	if err != nil {
		t.Fatalf("daemon.New: %v\nlogs:\n%s", err, e.logs)
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	e.d = d
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	e.base = "http://" + d.Addr().String()
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	e.http = &http.Client{Timeout: 10 * time.Second, Transport: tr}
	e.client = openai.NewClient(
		option.WithBaseURL(e.base+"/v1"),
		option.WithAPIKey(clientKey),
		option.WithMaxRetries(0),
		option.WithHTTPClient(e.http),
	)
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

// writeConfig writes the worked example changed by o to e.path (write then
// rename, as an operator's tooling would).
func (e *env) writeConfig(t *testing.T, o envOptions) {
	t.Helper()
	if o.anthropic == "" {
		o.anthropic = "    timeout: 5s"
	}
	if o.openaiModels == "" {
		o.openaiModels = "[gpt-4o, gpt-4o-mini]"
	}
	if o.logLevel == "" {
		o.logLevel = "info"
	}
	cfg := fmt.Sprintf(configYAML, e.openai.baseURL(), e.anth.srv.URL, e.bed.srv.URL, e.eu.baseURL(),
		o.anthropic, o.openaiModels, o.logLevel) + o.auth
	tmp := e.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, e.path); err != nil {
		t.Fatal(err)
	}
}

// calls returns how many requests each upstream received, in the order
// openai, anthropic, bedrock, eu.
func (e *env) calls() [4]int {
	return [4]int{e.openai.n(), e.anth.n(), e.bed.n(), e.eu.n()}
}

// testCtx is the deadline of one client call.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// chatParams is a chat request for model as a client would write it.
func chatParams(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."),
			openai.UserMessage("hi"),
		},
	}
}

// result is what a test keeps of one chat call through openai-go.
type result struct {
	content string
	finish  string
	model   string
	header  http.Header // the gateway's response headers
	err     error
}

// chat calls the gateway for p, streaming or not, and returns the text the
// client assembled (for a stream: the accumulated chunks, after the stream
// ended cleanly) and the response headers.
func (e *env) chat(t *testing.T, p openai.ChatCompletionNewParams, stream bool, opts ...option.RequestOption) result {
	t.Helper()
	var resp *http.Response
	opts = append(opts, option.WithResponseInto(&resp))
	var r result
	if !stream {
		comp, err := e.client.Chat.Completions.New(testCtx(t), p, opts...)
		r.err = err
		if err == nil {
			if len(comp.Choices) != 1 {
				t.Fatalf("completion has %d choices: %s", len(comp.Choices), comp.RawJSON())
			}
			r.content, r.finish, r.model = comp.Choices[0].Message.Content, comp.Choices[0].FinishReason, comp.Model
		}
	} else {
		s := e.client.Chat.Completions.NewStreaming(testCtx(t), p, opts...)
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			if !acc.AddChunk(s.Current()) {
				t.Fatalf("chunk does not accumulate: %s", s.Current().RawJSON())
			}
		}
		r.err = s.Err()
		_ = s.Close()
		if r.err == nil {
			if len(acc.Choices) != 1 {
				t.Fatalf("stream accumulated %d choices", len(acc.Choices))
			}
			r.content, r.finish, r.model = acc.Choices[0].Message.Content, acc.Choices[0].FinishReason, acc.Model
		}
	}
	if resp != nil {
		r.header = resp.Header
	}
	return r
}

// apiError returns the client's view of a gateway error, failing the test
// when err is not one.
func apiError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want an API error from the gateway, got %v", err)
	}
	return ae
}

// wantHeaders checks the gateway's X-Gateway-* headers; an empty want
// value is not checked.
func wantHeaders(t *testing.T, h http.Header, target, provider, model, attempts, rule string) {
	t.Helper()
	if h == nil {
		t.Fatal("no response headers")
	}
	for _, c := range []struct{ name, want string }{
		{"X-Gateway-Target", target},
		{"X-Gateway-Provider", provider},
		{"X-Gateway-Model", model},
		{"X-Gateway-Attempts", attempts},
		{"X-Gateway-Rule", rule},
	} {
		if c.want != "" && h.Get(c.name) != c.want {
			t.Errorf("%s = %q, want %q", c.name, h.Get(c.name), c.want)
		}
	}
}

// wantCalls checks how many requests each upstream received, in the order
// openai, anthropic, bedrock, eu.
func (e *env) wantCalls(t *testing.T, oa, anth, bed, eu int) {
	t.Helper()
	if got, want := e.calls(), [4]int{oa, anth, bed, eu}; got != want {
		t.Errorf("upstream calls [openai anthropic bedrock eu] = %v, want %v", got, want)
	}
}

// modes runs f as two subtests, non-streaming then streaming.
func modes(t *testing.T, f func(t *testing.T, stream bool)) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) { f(t, stream) })
	}
}
