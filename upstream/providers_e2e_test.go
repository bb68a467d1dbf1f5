package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
)

// End-to-end: the official openai-go client talks to a minimal gateway
// (a fasthttp server on 127.0.0.1 running Walk over the chain
// [anthropic, bedrock]) in front of mock Anthropic and Bedrock servers,
// also on 127.0.0.1.

// providerMock is a mock provider server recording what it received.
type providerMock struct {
	srv   *httptest.Server
	calls atomic.Int32
	mu    sync.Mutex
	seen  []*http.Request // with bodies read into bodies
	bods  [][]byte
	serve http.HandlerFunc
}

func newProviderMock(t *testing.T) *providerMock {
	m := &providerMock{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.seen = append(m.seen, r)
		m.bods = append(m.bods, b)
		serve := m.serve
		m.mu.Unlock()
		serve(w, r)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *providerMock) set(h http.HandlerFunc) {
	m.mu.Lock()
	m.serve = h
	m.mu.Unlock()
}

func (m *providerMock) reset() {
	m.mu.Lock()
	m.seen, m.bods = nil, nil
	m.mu.Unlock()
	m.calls.Store(0)
}

func (m *providerMock) last() (*http.Request, []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.seen) == 0 {
		return nil, nil
	}
	return m.seen[len(m.seen)-1], m.bods[len(m.bods)-1]
}

func anthropicError(status int, typ, msg string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
		w.Write(b) //nolint:errcheck
	}
}

func bedrockConverseOK(text string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{
			"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": []any{map[string]string{"text": text}}}},
			"stopReason": "end_turn",
			"usage":      map[string]int{"inputTokens": 3, "outputTokens": 2, "totalTokens": 5},
		})
		w.Write(b) //nolint:errcheck
	}
}

type e2eGateway struct {
	anth, bed *providerMock
	client    openai.Client
}

func startE2E(t *testing.T) *e2eGateway {
	return startE2EWith(t, func(*config.Target) {})
}

// startE2EWith starts the gateway; bedrockMod adjusts the bedrock target.
func startE2EWith(t *testing.T, bedrockMod func(*config.Target)) *e2eGateway {
	g := &e2eGateway{anth: newProviderMock(t), bed: newProviderMock(t)}
	pool := NewPool()
	mk := func(ct config.Target) *Target {
		ct.Timeout = 5 * time.Second
		ct.Retry = config.Retry{Attempts: 1, InitialBackoffMs: 1}
		ct.CircuitBreaker = config.CircuitBreaker{FailureThreshold: 100, SuccessThreshold: 1, MaxHalfThreshold: 1, Timeout: time.Second}
		ct.Concurrency = config.Concurrency{MaxConcurrency: 8, QueueSize: 8}
		tg, err := pool.Target(&ct)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	bed := config.Target{VirtualKey: "bedrock", Provider: config.ProviderBedrock, BaseURL: g.bed.srv.URL,
		APIKey: "bedrock-secret", Region: "us-east-1", ModelMap: map[string]string{"claude": "anthropic.claude-sonnet-4-5-v1:0"}}
	bedrockMod(&bed)
	chain := []*Target{
		mk(config.Target{VirtualKey: "anthropic", Provider: config.ProviderAnthropic, BaseURL: g.anth.srv.URL,
			APIKey: "sk-ant-secret", ModelMap: map[string]string{"claude": "claude-sonnet-4-5"}}),
		mk(bed),
	}
	var parsers fastjson.ParserPool
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		p := parsers.Get()
		defer parsers.Put(p)
		v, err := p.ParseBytes(ctx.PostBody())
		if err != nil {
			ctx.Error("bad body", 400)
			return
		}
		call := &Call{Surface: router.SurfaceChat, Stream: v.GetBool("stream"), Body: ctx.PostBody(),
			Model: append([]byte(nil), v.GetStringBytes("model")...)}
		Walk(ctx, withTrace(call, &ctx.Request.Header), chain, time.Now().Add(10*time.Second), nil)
	}, Logger: quietLogger{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)                     //nolint:errcheck
	t.Cleanup(func() { srv.Shutdown() }) //nolint:errcheck
	g.client = openai.NewClient(option.WithBaseURL("http://"+ln.Addr().String()+"/v1"),
		option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	return g
}

func e2eParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "claude",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("hi")},
	}
}

func TestE2EFailoverAnthropicToBedrock(t *testing.T) {
	g := startE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g.bed.set(bedrockConverseOK("hello from bedrock"))
	for _, tc := range []struct {
		name     string
		anth     http.HandlerFunc
		failover bool
		status   int
	}{
		{"overloaded 529", anthropicError(529, "overloaded_error", "Overloaded"), true, 0},
		{"prompt is too long", anthropicError(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"), true, 0},
		{"other 400", anthropicError(400, "invalid_request_error", "messages.0.content: Input should be a valid list"), false, 400},
		{"401", anthropicError(401, "authentication_error", "invalid x-api-key"), false, 502},
		// Last: a 429 parks anthropic for the rest of the test.
		{"rate limited 429", anthropicError(429, "rate_limit_error", "slow down"), true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.anth.reset()
			g.bed.reset()
			g.anth.set(tc.anth)
			var httpResp *http.Response
			comp, err := g.client.Chat.Completions.New(ctx, e2eParams(), option.WithResponseInto(&httpResp))
			if g.anth.calls.Load() != 1 {
				t.Fatalf("anthropic calls %d, want 1", g.anth.calls.Load())
			}
			if !tc.failover {
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
					t.Fatalf("want a %d through the client, got %v", tc.status, err)
				}
				if tc.status == 400 && !strings.Contains(apiErr.Message, "Input should be a valid list") {
					t.Errorf("message %q", apiErr.Message)
				}
				if n := g.bed.calls.Load(); n != 0 {
					t.Fatalf("bedrock called %d times after a non-failover error", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if comp.Choices[0].Message.Content != "hello from bedrock" || comp.Choices[0].FinishReason != "stop" ||
				comp.Model != "claude" || comp.Usage.TotalTokens != 5 {
				t.Fatalf("completion %+v", comp)
			}
			if httpResp.Header.Get(HeaderTarget) != "bedrock" || httpResp.Header.Get(HeaderAttempts) != "2" {
				t.Errorf("headers %v", httpResp.Header)
			}
			// Each provider got its own credential and its own translation.
			ar, ab := g.anth.last()
			br, bb := g.bed.last()
			if ar.Header.Get("X-Api-Key") != "sk-ant-secret" || ar.Header.Get("Authorization") != "" || ar.URL.Path != "/v1/messages" {
				t.Errorf("anthropic request %s %v", ar.URL.Path, ar.Header)
			}
			if !bytes.Contains(ab, []byte(`"model":"claude-sonnet-4-5"`)) || !bytes.Contains(ab, []byte(`"system":[{"type":"text","text":"Be brief."}]`)) {
				t.Errorf("anthropic body %s", ab)
			}
			if br.Header.Get("Authorization") != "Bearer bedrock-secret" || br.Header.Get("X-Api-Key") != "" ||
				br.URL.EscapedPath() != "/model/anthropic.claude-sonnet-4-5-v1%3A0/converse" {
				t.Errorf("bedrock request %s %v", br.URL.EscapedPath(), br.Header)
			}
			if !bytes.Contains(bb, []byte(`"system":[{"text":"Be brief."}]`)) {
				t.Errorf("bedrock body %s", bb)
			}
			for _, r := range []*http.Request{ar, br} {
				if strings.Contains(r.Header.Get("Authorization"), "client-key") || strings.Contains(r.Header.Get("X-Api-Key"), "client-key") {
					t.Error("client key forwarded upstream")
				}
			}
		})
	}
}

// The first translated chunk reaches the client while the upstream is still
// streaming: the mock holds the rest of its stream until the client has it.
func TestE2EAnthropicStreamFirstChunkBeforeUpstreamEnds(t *testing.T) {
	g := startE2E(t)
	release := make(chan struct{})
	var heldTooLong atomic.Bool
	g.anth.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_e2e\",\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n") //nolint:errcheck
		io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n")      //nolint:errcheck
		fl.Flush()
		select {
		case <-release:
		case <-time.After(5 * time.Second):
			heldTooLong.Store(true)
		}
		io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" world\"}}\n\n")                 //nolint:errcheck
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n") //nolint:errcheck
		io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")                                                                                                   //nolint:errcheck
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream := g.client.Chat.Completions.NewStreaming(ctx, e2eParams())
	var acc openai.ChatCompletionAccumulator
	released := false
	for stream.Next() {
		c := stream.Current()
		acc.AddChunk(c)
		if !released && len(c.Choices) > 0 && c.Choices[0].Delta.Content == "Hello" {
			close(release)
			released = true
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if !released || heldTooLong.Load() {
		t.Fatalf("first chunk not delivered before the upstream finished (released %v)", released)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hello world" || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("streamed %+v", acc.Choices)
	}
	if g.bed.calls.Load() != 0 {
		t.Error("bedrock called for a healthy anthropic stream")
	}
}

// An error event as the first thing in an Anthropic stream fails over to
// Bedrock's ConverseStream, whose event-stream frames are translated.
func TestE2EStreamFailoverToBedrockEventStream(t *testing.T) {
	g := startE2E(t)
	g.anth.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n") //nolint:errcheck
	})
	g.bed.set(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/converse-stream") {
			http.Error(w, `{"message":"wrong path"}`, 404)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		enc := eventstream.NewEncoder()
		for _, e := range []struct{ typ, payload string }{
			{"messageStart", `{"role":"assistant"}`},
			{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"from "}}`},
			{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"bedrock"}}`},
			{"contentBlockStop", `{"contentBlockIndex":0}`},
			{"messageStop", `{"stopReason":"max_tokens"}`},
			{"metadata", `{"usage":{"inputTokens":3,"outputTokens":2,"totalTokens":5},"metrics":{"latencyMs":1}}`},
		} {
			var m eventstream.Message
			m.Headers.Set(":message-type", eventstream.StringValue("event"))
			m.Headers.Set(":event-type", eventstream.StringValue(e.typ))
			m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			m.Payload = []byte(e.payload)
			enc.Encode(w, m) //nolint:errcheck
			w.(http.Flusher).Flush()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := e2eParams()
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := g.client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "from bedrock" || acc.Choices[0].FinishReason != "length" ||
		acc.Usage.TotalTokens != 5 {
		t.Fatalf("streamed %+v usage %+v", acc.Choices, acc.Usage)
	}
	if g.anth.calls.Load() != 1 || g.bed.calls.Load() != 1 {
		t.Errorf("calls anthropic %d bedrock %d", g.anth.calls.Load(), g.bed.calls.Load())
	}
}

// verifySigV4 recomputes the signature of a received request with the AWS
// SDK signer, as the service would, and reports whether it matches.
func verifySigV4(r *http.Request, body []byte, creds aws.Credentials, region string) (bool, string) {
	auth := r.Header.Get("Authorization")
	i := strings.Index(auth, "SignedHeaders=")
	if i < 0 {
		return false, "no SignedHeaders in " + auth
	}
	signed := auth[i+len("SignedHeaders="):]
	signed = signed[:strings.IndexByte(signed, ',')]
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return false, "bad X-Amz-Date"
	}
	check, _ := http.NewRequest(r.Method, "http://"+r.Host+"/", nil)
	check.URL.Path, check.URL.RawPath = r.URL.Path, r.URL.RawPath
	check.Header = http.Header{}
	for _, h := range strings.Split(signed, ";") {
		switch h {
		case "host", "x-amz-date", "x-amz-security-token", "content-length":
		default:
			check.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	if strings.Contains(signed, "content-length") {
		check.ContentLength = int64(len(body))
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, check, hex.EncodeToString(sum[:]), "bedrock", region, at); err != nil {
		return false, err.Error()
	}
	return check.Header.Get("Authorization") == auth, check.Header.Get("Authorization")
}

// SigV4 as received over the wire through the walk's HostClient, and
// Bedrock's own error answers classified from the real response headers.
func TestE2EBedrockSigV4AndErrors(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "AKIDE2E", SecretAccessKey: "e2e/secret+key", SessionToken: "session-e2e"}
	g := startE2EWith(t, func(ct *config.Target) {
		ct.APIKey = ""
		ct.Region = "eu-west-3"
		ct.AWSAccessKeyID, ct.AWSSecretAccessKey, ct.AWSSessionToken = creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken
	})
	g.anth.set(anthropicError(529, "overloaded_error", "Overloaded"))
	var bedrockAnswer atomic.Value
	bedrockAnswer.Store("ok")
	g.bed.set(func(w http.ResponseWriter, r *http.Request) {
		_, body := g.bed.last()
		if ok, want := verifySigV4(r, body, creds, "eu-west-3"); !ok {
			w.Header().Set("x-amzn-ErrorType", "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/")
			w.WriteHeader(403)
			io.WriteString(w, `{"message":"signature mismatch; want `+want+`"}`) //nolint:errcheck
			return
		}
		if r.Header.Get("X-Amz-Security-Token") != creds.SessionToken {
			w.WriteHeader(403)
			return
		}
		switch bedrockAnswer.Load() {
		case "too long":
			w.Header().Set("x-amzn-ErrorType", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(400)
			io.WriteString(w, `{"message":"Input is too long for requested model."}`) //nolint:errcheck
		case "throttled":
			w.Header().Set("x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(429)
			io.WriteString(w, `{"message":"Too many requests, please wait before trying again."}`) //nolint:errcheck
		default:
			bedrockConverseOK("signed hello")(w, r)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The forwarded trace context rides outside the signature, which still
	// verifies.
	comp, err := g.client.Chat.Completions.New(ctx, e2eParams(),
		option.WithHeader("traceparent", goodParent), option.WithHeader("tracestate", goodState))
	if err != nil {
		t.Fatalf("signed request refused: %v", err)
	}
	if comp.Choices[0].Message.Content != "signed hello" {
		t.Fatalf("completion %+v", comp)
	}
	r, _ := g.bed.last()
	if r.Header.Get("traceparent") != goodParent || r.Header.Get("tracestate") != goodState {
		t.Errorf("trace context %q %q", r.Header.Get("traceparent"), r.Header.Get("tracestate"))
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDE2E/") ||
		!strings.Contains(r.Header.Get("Authorization"), "/eu-west-3/bedrock/aws4_request") {
		t.Errorf("Authorization %q", r.Header.Get("Authorization"))
	}

	// Bedrock is the last member: its context-length error reaches the
	// client as its own 400.
	bedrockAnswer.Store("too long")
	_, err = g.client.Chat.Completions.New(ctx, e2eParams())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" ||
		apiErr.Message != "Input is too long for requested model." {
		t.Fatalf("want bedrock's context-length 400, got %v", err)
	}

	bedrockAnswer.Store("throttled")
	_, err = g.client.Chat.Completions.New(ctx, e2eParams())
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" {
		t.Fatalf("want 429 rate_limit_exceeded, got %v", err)
	}
	if n := g.bed.calls.Load(); n != 3 {
		t.Errorf("bedrock calls %d, want 3", n)
	}
}
