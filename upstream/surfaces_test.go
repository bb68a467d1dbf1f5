package upstream

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/provider/providertest"
	"github.com/switchyard/switchyard/router"
)

// The responses and messages surfaces through the walk: pass-through
// requests, named-event streams, their failover classes and envelopes.

const (
	messagesBody  = `{"model":"claude-x","max_tokens":64,"metadata":{"user_id":"u"},"messages":[{"role":"user","content":"hi \u00e9"}]}`
	responsesBody = `{"model":"gpt-x","input":"hi \u00e9","user":"u","metadata":{"k":"v"}}`
)

func messagesCall(stream bool) *Call {
	return &Call{Surface: router.SurfaceMessages, Stream: stream, Body: []byte(messagesBody), Model: []byte("claude-x")}
}

func responsesCall(stream bool) *Call {
	return &Call{Surface: router.SurfaceResponses, Stream: stream, Body: []byte(responsesBody), Model: []byte("gpt-x")}
}

// anthropicTarget is an anthropic target on host (server root base URL).
func (h *harness) anthropicTarget(host string, mod func(*config.Target)) *Target {
	return h.target(host, func(ct *config.Target) {
		ct.Provider = config.ProviderAnthropic
		ct.BaseURL = "http://" + host
		if mod != nil {
			mod(ct)
		}
	})
}

func TestMessagesPassThroughRequest(t *testing.T) {
	h := newHarness(t)
	m := h.mock("a", func(ctx *fasthttp.RequestCtx, _ int) {
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"id":"msg_1","type":"message","content":[]}`)
	})
	ta := h.anthropicTarget("a", nil)
	rc, res := h.walk(messagesCall(false), []*Target{ta}, 5*time.Second, nil,
		"Authorization", "Bearer client-key", "x-api-key", "client-key", "X-Gateway-Metadata", `{"a":"b"}`,
		"anthropic-version", "2099-01-01", "anthropic-beta", "tools-2024", "anthropic-beta", "files-2025", "Cookie", "c=1", "User-Agent", "client-agent")
	if res.Status != 200 || string(rc.Response.Body()) != `{"id":"msg_1","type":"message","content":[]}` {
		t.Fatalf("status %d body %s", res.Status, rc.Response.Body())
	}
	req := m.last()
	if got := string(req.URI().Path()); got != "/v1/messages" {
		t.Errorf("path %q", got)
	}
	if string(req.Body()) != messagesBody {
		t.Errorf("body changed:\n%s", req.Body())
	}
	if got := peekFold(req, "x-api-key"); got != "sk-a" {
		t.Errorf("x-api-key %q, want the target's", got)
	}
	if got := peekFold(req, "anthropic-version"); got != "2099-01-01" {
		t.Errorf("anthropic-version %q, want the client's", got)
	}
	if got := peekFold(req, "anthropic-beta"); got != "tools-2024, files-2025" {
		t.Errorf("anthropic-beta %q", got)
	}
	for _, k := range []string{"Authorization", "X-Gateway-Metadata", "Cookie"} {
		if v := peekFold(req, k); v != "" {
			t.Errorf("client header %s forwarded: %q", k, v)
		}
	}
	if strings.Contains(string(req.Header.UserAgent()), "client-agent") {
		t.Errorf("client User-Agent forwarded")
	}
}

func TestMessagesDefaultsVersionAndCountTokensPath(t *testing.T) {
	h := newHarness(t)
	m := h.mock("a", status(200, `{"input_tokens":7}`))
	ta := h.anthropicTarget("a", func(ct *config.Target) { ct.ModelMap = map[string]string{"claude-x": "claude-x-2025"} })
	call := messagesCall(false)
	call.CountTokens = true
	rc, res := h.walk(call, []*Target{ta}, 5*time.Second, nil)
	if res.Status != 200 || string(rc.Response.Body()) != `{"input_tokens":7}` {
		t.Fatalf("status %d body %s", res.Status, rc.Response.Body())
	}
	req := m.last()
	if got := string(req.URI().Path()); got != "/v1/messages/count_tokens" {
		t.Errorf("path %q", got)
	}
	if got := peekFold(req, "anthropic-version"); got != anthropicVersion {
		t.Errorf("anthropic-version %q, want the default", got)
	}
	want := strings.Replace(messagesBody, `"claude-x"`, `"claude-x-2025"`, 1)
	if string(req.Body()) != want {
		t.Errorf("body:\n got  %s\n want %s", req.Body(), want)
	}
}

func TestResponsesPassThroughRequest(t *testing.T) {
	h := newHarness(t)
	m := h.mock("a", status(200, `{"id":"resp_1","object":"response"}`))
	ta := h.target("a", nil)
	rc, res := h.walk(responsesCall(false), []*Target{ta}, 5*time.Second, nil, "Authorization", "Bearer client-key", "x-api-key", "client-key")
	if res.Status != 200 || string(rc.Response.Body()) != `{"id":"resp_1","object":"response"}` {
		t.Fatalf("status %d body %s", res.Status, rc.Response.Body())
	}
	req := m.last()
	if got := string(req.URI().Path()); got != "/v1/responses" {
		t.Errorf("path %q", got)
	}
	if string(req.Body()) != responsesBody {
		t.Errorf("body changed: %s", req.Body())
	}
	if got := peekFold(req, "Authorization"); got != "Bearer sk-a" {
		t.Errorf("Authorization %q", got)
	}
	if v := peekFold(req, "x-api-key"); v != "" {
		t.Errorf("client x-api-key forwarded: %q", v)
	}
}

// Non-stream failures on messages: failover classes as on chat, an
// upstream 4xx body as it came, the walk's own errors in Anthropic's
// envelope.
func TestMessagesFailuresNonStream(t *testing.T) {
	for _, tc := range []struct {
		name       string
		first      func(*fasthttp.RequestCtx, int)
		failover   bool
		status     int    // when there is no failover
		body       string // exact, when set
		bodyPrefix string
	}{
		{"529 overloaded", status(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), true, 0, "", ""},
		{"500", status(500, `oops`), true, 0, "", ""},
		{"429", status(429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`, "Retry-After", "7"), true, 0, "", ""},
		{"prompt too long", status(400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}`), true, 0, "", ""},
		{"400 as it came", status(400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"},"request_id":"r1"}`), false, 400,
			`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"},"request_id":"r1"}`, ""},
		{"404 not Anthropic-shaped", status(404, `<html>`), false, 404, `{"type":"error","error":{"type":"not_found_error","message":"anthropic answered HTTP 404"}}`, ""},
		{"401 is 502", status(401, `{"type":"error","error":{"type":"authentication_error","message":"bad key"}}`), false, 502, "", `{"type":"error","error":{"type":"api_error",`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mock("a", tc.first)
			b := h.mock("b", status(200, `{"id":"msg_b"}`))
			chain := []*Target{h.anthropicTarget("a", nil), h.anthropicTarget("b", nil)}
			rc, res := h.walk(messagesCall(false), chain, 5*time.Second, nil)
			body := string(rc.Response.Body())
			if tc.failover {
				if res.Status != 200 || body != `{"id":"msg_b"}` || b.calls.Load() != 1 {
					t.Fatalf("no failover: %d %s", res.Status, body)
				}
				return
			}
			if b.calls.Load() != 0 {
				t.Errorf("failed over")
			}
			if res.Status != tc.status || (tc.body != "" && body != tc.body) || !strings.HasPrefix(body, tc.bodyPrefix) {
				t.Errorf("got %d %s", res.Status, body)
			}
		})
	}
}

// The walk's final errors on messages are Anthropic-shaped with docs/api.md, Errors's
// status.
func TestMessagesWalkErrorsAnthropicShaped(t *testing.T) {
	h := newHarness(t)
	h.mock("a", status(503, `{}`))
	h.mock("b", status(429, `{}`, "Retry-After", "3"))
	rc, res := h.walk(messagesCall(false), []*Target{h.anthropicTarget("a", nil), h.anthropicTarget("b", nil)}, 5*time.Second, nil)
	if res.Status != 429 || string(rc.Response.Body()) != `{"type":"error","error":{"type":"rate_limit_error","message":"upstream rate limit exceeded"}}` {
		t.Errorf("429: %d %s", res.Status, rc.Response.Body())
	}
	// Unreachable (no mock "z"): 502 api_error.
	rc, res = h.walk(messagesCall(false), []*Target{h.anthropicTarget("z", nil)}, 5*time.Second, nil)
	if res.Status != 502 || string(rc.Response.Body()) != `{"type":"error","error":{"type":"api_error","message":"upstream failed"}}` {
		t.Errorf("502: %d %s", res.Status, rc.Response.Body())
	}
	// No candidate left: 503 overloaded_error.
	rc, res = h.walk(messagesCall(false), nil, 5*time.Second, nil)
	if res.Status != 503 || !strings.HasPrefix(string(rc.Response.Body()), `{"type":"error","error":{"type":"overloaded_error","message":"no upstream available`) {
		t.Errorf("503: %d %s", res.Status, rc.Response.Body())
	}
}

func TestMessagesStreamRelayedByteForByte(t *testing.T) {
	h := newHarness(t)
	m := h.mock("a", sse(0, providertest.MsgStart, ": comment\n\n", providertest.MsgPing, providertest.MsgDelta, providertest.MsgStop))
	obs := newRec()
	rc, res := h.walk(messagesCall(true), []*Target{h.anthropicTarget("a", nil)}, 5*time.Second, obs)
	if !res.Stream {
		t.Fatalf("not committed: %d %s", res.Status, rc.Response.Body())
	}
	if got, want := streamBody(t, rc), providertest.MsgStart+providertest.MsgPing+providertest.MsgDelta+providertest.MsgStop; got != want {
		t.Errorf("stream:\n got  %q\n want %q", got, want)
	}
	if end := <-obs.ends; end.Class != ClassOK {
		t.Errorf("stream outcome %v", end.Class)
	}
	if got := peekFold(m.last(), "Accept"); got != "text/event-stream" {
		t.Errorf("Accept %q", got)
	}
}

func TestMessagesStreamFirstEventError(t *testing.T) {
	for _, tc := range []struct {
		typ, msg string
		failover bool
		status   int
	}{
		{"overloaded_error", "Overloaded", true, 0},
		{"api_error", "Internal", true, 0},
		{"rate_limit_error", "slow down", true, 0},
		{"invalid_request_error", "prompt is too long: 1 > 0", true, 0},
		{"invalid_request_error", "messages: bad", false, 400},
		{"permission_error", "no", false, 502},
	} {
		t.Run(tc.typ+"/"+tc.msg, func(t *testing.T) {
			h := newHarness(t)
			h.mock("a", sse(0, providertest.AnthropicErrorEvent(tc.typ, tc.msg)))
			b := h.mock("b", sse(0, providertest.MsgStart, providertest.MsgStop))
			chain := []*Target{h.anthropicTarget("a", nil), h.anthropicTarget("b", nil)}
			rc, res := h.walk(messagesCall(true), chain, 5*time.Second, nil)
			if tc.failover {
				if !res.Stream || b.calls.Load() != 1 || res.Target != chain[1] {
					t.Fatalf("no failover: %d %s", res.Status, rc.Response.Body())
				}
				if got := streamBody(t, rc); got != providertest.MsgStart+providertest.MsgStop {
					t.Errorf("stream %q", got)
				}
				return
			}
			if res.Stream || b.calls.Load() != 0 || res.Status != tc.status {
				t.Fatalf("got %d stream=%v calls b %d: %s", res.Status, res.Stream, b.calls.Load(), rc.Response.Body())
			}
			body := string(rc.Response.Body())
			if tc.status == 400 && body != `{"type":"error","error":{"type":"invalid_request_error","message":"messages: bad"}}` {
				t.Errorf("400 body %s", body)
			}
			if tc.status == 502 && !strings.HasPrefix(body, `{"type":"error","error":{"type":"api_error"`) {
				t.Errorf("502 body %s", body)
			}
		})
	}
}

func TestMessagesStreamCutAfterCommit(t *testing.T) {
	h := newHarness(t)
	h.mock("a", sse(0, providertest.MsgStart, providertest.MsgDelta)) // ends without message_stop
	obs := newRec()
	rc, res := h.walk(messagesCall(true), []*Target{h.anthropicTarget("a", nil)}, 5*time.Second, obs)
	if !res.Stream {
		t.Fatalf("not committed")
	}
	want := providertest.MsgStart + providertest.MsgDelta + "event: error\ndata: " +
		`{"type":"error","error":{"type":"api_error","message":"upstream stream ended before its last event"}}` + "\n\n"
	if got := streamBody(t, rc); got != want {
		t.Errorf("stream:\n got  %q\n want %q", got, want)
	}
	if end := <-obs.ends; end.Class != ClassTransport {
		t.Errorf("outcome %v", end.Class)
	}
}

// An upstream error event after the commit reaches the client as sent,
// with no second error frame.
func TestMessagesStreamLateErrorEventRelayed(t *testing.T) {
	h := newHarness(t)
	late := providertest.AnthropicErrorEvent("overloaded_error", "Overloaded")
	h.mock("a", sse(0, providertest.MsgStart, providertest.MsgDelta, late, providertest.MsgStop))
	obs := newRec()
	rc, _ := h.walk(messagesCall(true), []*Target{h.anthropicTarget("a", nil)}, 5*time.Second, obs)
	if got := streamBody(t, rc); got != providertest.MsgStart+providertest.MsgDelta+late {
		t.Errorf("stream:\n got  %q", got)
	}
	if end := <-obs.ends; end.Class != ClassServer {
		t.Errorf("outcome %v", end.Class)
	}
}

func TestResponsesStream(t *testing.T) {
	h := newHarness(t)
	h.mock("a", sse(0, providertest.RespCreated, providertest.RespDelta, providertest.RespCompleted))
	obs := newRec()
	rc, res := h.walk(responsesCall(true), []*Target{h.target("a", nil)}, 5*time.Second, obs)
	if !res.Stream {
		t.Fatalf("not committed: %d %s", res.Status, rc.Response.Body())
	}
	if got := streamBody(t, rc); got != providertest.RespCreated+providertest.RespDelta+providertest.RespCompleted {
		t.Errorf("stream %q", got)
	}
	if end := <-obs.ends; end.Class != ClassOK {
		t.Errorf("outcome %v", end.Class)
	}
}

func TestResponsesStreamFirstEventError(t *testing.T) {
	for _, tc := range []struct {
		name     string
		first    string
		failover bool
		body     string
	}{
		{"failed server_error", providertest.RespFailed("server_error"), true, ""},
		{"failed rate limit", providertest.RespFailed("rate_limit_exceeded"), true, ""},
		{"error context length", providertest.RespError("invalid_request_error", "context_length_exceeded"), true, ""},
		{"error server", providertest.RespError("server_error", "server_error"), true, ""},
		{"error invalid request", providertest.RespError("invalid_request_error", "invalid_value"), false,
			`{"error":{"message":"bad: invalid_value","type":"invalid_request_error","param":null,"code":"invalid_value"}}`},
		{"failed invalid prompt", providertest.RespFailed("invalid_prompt"), false,
			`{"error":{"message":"failed: invalid_prompt","type":"invalid_request_error","param":null,"code":"invalid_prompt"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mock("a", sse(0, tc.first))
			b := h.mock("b", sse(0, providertest.RespCreated, providertest.RespCompleted))
			chain := []*Target{h.target("a", nil), h.target("b", nil)}
			rc, res := h.walk(responsesCall(true), chain, 5*time.Second, nil)
			if tc.failover {
				if !res.Stream || b.calls.Load() != 1 {
					t.Fatalf("no failover: %d %s", res.Status, rc.Response.Body())
				}
				streamBody(t, rc)
				return
			}
			if res.Stream || b.calls.Load() != 0 || res.Status != 400 || string(rc.Response.Body()) != tc.body {
				t.Fatalf("got %d stream=%v: %s", res.Status, res.Stream, rc.Response.Body())
			}
		})
	}
}

func TestResponsesStreamCutAfterCommit(t *testing.T) {
	h := newHarness(t)
	h.mock("a", sse(0, providertest.RespCreated, providertest.RespDelta))
	obs := newRec()
	rc, _ := h.walk(responsesCall(true), []*Target{h.target("a", nil)}, 5*time.Second, obs)
	want := providertest.RespCreated + providertest.RespDelta + "event: error\ndata: " +
		`{"type":"error","code":"upstream_error","message":"upstream stream ended before its last event","param":null,` +
		`"error":{"message":"upstream stream ended before its last event","type":"upstream_error","param":null,"code":"upstream_error"}}` + "\n\n"
	if got := streamBody(t, rc); got != want {
		t.Errorf("stream:\n got  %q\n want %q", got, want)
	}
	if end := <-obs.ends; end.Class != ClassTransport {
		t.Errorf("outcome %v", end.Class)
	}
}

func TestOpenAIDoesNotServeMessages(t *testing.T) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	if err := (openAIAdapter{}).BuildRequest(req, &Endpoint{BaseURL: "http://x/v1"}, messagesCall(false), []byte("m")); err == nil {
		t.Error("openai built a messages request")
	}
}

// peekFold returns the values of header k of req (names compared ignoring
// case; the mock keeps names as sent), joined by ", ".
func peekFold(req *fasthttp.Request, k string) string {
	var vals []string
	for name, v := range req.Header.All() {
		if strings.EqualFold(string(name), k) {
			vals = append(vals, string(v))
		}
	}
	return strings.Join(vals, ", ")
}

// An error right after the events that only open a stream (message_start;
// response.created, response.in_progress) still precedes the client's first
// byte: failover-safe per its type.
func TestStreamErrorAfterOpeningEventsFailsOver(t *testing.T) {
	for _, tc := range []struct {
		name   string
		call   *Call
		target func(h *harness, host string) *Target
		first  []string
		ok     []string
	}{
		{"messages", messagesCall(true), func(h *harness, host string) *Target { return h.anthropicTarget(host, nil) },
			[]string{providertest.MsgStart, providertest.MsgPing, providertest.AnthropicErrorEvent("overloaded_error", "Overloaded")}, []string{providertest.MsgStart, providertest.MsgStop}},
		{"responses", responsesCall(true), func(h *harness, host string) *Target { return h.target(host, nil) },
			[]string{providertest.RespCreated, strings.Replace(providertest.RespCreated, "response.created", "response.in_progress", 2), providertest.RespFailed("server_error")},
			[]string{providertest.RespCreated, providertest.RespCompleted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mock("a", sse(0, tc.first...))
			b := h.mock("b", sse(0, tc.ok...))
			chain := []*Target{tc.target(h, "a"), tc.target(h, "b")}
			rc, res := h.walk(tc.call, chain, 5*time.Second, nil)
			if !res.Stream || b.calls.Load() != 1 || res.Target != chain[1] {
				t.Fatalf("no failover: %d %s", res.Status, rc.Response.Body())
			}
			if got := streamBody(t, rc); got != strings.Join(tc.ok, "") {
				t.Errorf("stream %q", got)
			}
		})
	}
}

// The hold ends at the first event that does not open the stream: an error
// after it comes after the commit and is relayed, not failed over.
func TestStreamHoldEndsAtFirstOtherEvent(t *testing.T) {
	h := newHarness(t)
	cbStart := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	late := providertest.AnthropicErrorEvent("overloaded_error", "Overloaded")
	h.mock("a", sse(10*time.Millisecond, providertest.MsgStart, cbStart, late))
	b := h.mock("b", sse(0, providertest.MsgStart, providertest.MsgStop))
	obs := newRec()
	rc, res := h.walk(messagesCall(true), []*Target{h.anthropicTarget("a", nil), h.anthropicTarget("b", nil)}, 5*time.Second, obs)
	if !res.Stream || b.calls.Load() != 0 {
		t.Fatalf("stream %v, b calls %d", res.Stream, b.calls.Load())
	}
	if got := streamBody(t, rc); got != providertest.MsgStart+cbStart+late {
		t.Errorf("stream %q", got)
	}
	if end := <-obs.ends; end.Class != ClassServer {
		t.Errorf("outcome %v", end.Class)
	}
}
