package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/switchyard/switchyard/config"
)

// translatedChain starts mocks for an anthropic member, an openai member
// and a spare openai server no chain names, and a gateway walking
// [anthropic, openai].
type translatedChain struct {
	anth, oai, spare *providerMock
	url              string
	client           anthropic.Client
}

func startTranslatedChain(t *testing.T) *translatedChain {
	c := &translatedChain{anth: newProviderMock(t), oai: newProviderMock(t), spare: newProviderMock(t)}
	c.oai.set(serveWith(c.oai, chatServer))
	c.spare.set(serveWith(c.spare, chatServer))
	pool := NewPool()
	anth := cloudTarget(t, pool, config.Target{VirtualKey: "anthropic", Provider: config.ProviderAnthropic, BaseURL: c.anth.srv.URL, APIKey: "sk-ant"})
	oai := cloudTarget(t, pool, config.Target{VirtualKey: "openai", Provider: config.ProviderOpenAI, BaseURL: c.oai.srv.URL + "/v1",
		APIKey: "sk-oai", ModelMap: map[string]string{"claude-client": "gpt-4o"}})
	c.url = cloudGateway(t, []*Target{anth, oai})
	c.client = anthropic.NewClient(anthropicopt.WithBaseURL(c.url), anthropicopt.WithAPIKey("client-key"), anthropicopt.WithMaxRetries(0))
	return c
}

func (c *translatedChain) calls() [3]int32 {
	return [3]int32{c.anth.calls.Load(), c.oai.calls.Load(), c.spare.calls.Load()}
}

// TestTranslatedFailoverAcrossForms: the native member answers 503, the
// walk moves on, and the client's Messages stream comes translated from
// the openai member; nothing outside the chain is called.
func TestTranslatedFailoverAcrossForms(t *testing.T) {
	c := startTranslatedChain(t)
	c.anth.set(anthropicError(503, "overloaded_error", "Overloaded"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msg, err := ask(ctx, c.client, messagesParams(), true)
	if err != nil {
		t.Fatal(err)
	}
	checkMessage(t, "failed over", msg, toolTurn, false)
	if got := c.calls(); got != [3]int32{1, 1, 0} {
		t.Errorf("calls anthropic, openai, spare = %v, want [1 1 0]", got)
	}
	// The native member got the client's Messages body, the openai one chat.
	if r, _ := c.anth.last(); r.URL.Path != "/v1/messages" {
		t.Errorf("anthropic path %s", r.URL.Path)
	}
	if r, _ := c.oai.last(); r.URL.Path != "/v1/chat/completions" {
		t.Errorf("openai path %s", r.URL.Path)
	}
}

// TestTranslatedCountTokens: a member that cannot count answers the
// estimate without a call, reached in chain order: after the native
// member fails over, the openai member answers it.
func TestTranslatedCountTokens(t *testing.T) {
	c := startTranslatedChain(t)
	c.anth.set(anthropicError(529, "overloaded_error", "Overloaded"))
	body := `{"model":"claude-client","messages":[{"role":"user","content":"How many tokens is this?"}]}`
	status, h, got := post(t, c.url+"/v1/messages/count_tokens", body)
	want := fmt.Sprintf(`{"input_tokens":%d}`, (len(body)+3)/4)
	if status != 200 || got != want || h.Get("X-Gateway-Estimate") != "true" {
		t.Fatalf("%d %s (estimate %q), want %s", status, got, h.Get("X-Gateway-Estimate"), want)
	}
	if h.Get("X-Gateway-Target") != "openai" || h.Get("X-Gateway-Provider") != "openai" || h.Get("X-Gateway-Attempts") != "1" ||
		h.Get("X-Gateway-Model") != "gpt-4o" {
		t.Errorf("headers target %q provider %q attempts %q model %q", h.Get("X-Gateway-Target"), h.Get("X-Gateway-Provider"),
			h.Get("X-Gateway-Attempts"), h.Get("X-Gateway-Model"))
	}
	if got := c.calls(); got != [3]int32{1, 0, 0} {
		t.Errorf("calls anthropic, openai, spare = %v, want [1 0 0]", got)
	}
	// The SDK reads it as a count.
	n, err := c.client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "claude-client",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if err != nil || n.InputTokens <= 0 {
		t.Errorf("SDK count %v %v", n, err)
	}
	// A native answer carries no estimate header.
	c.anth.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":7}`) //nolint:errcheck
	})
	status, h, got = post(t, c.url+"/v1/messages/count_tokens", body)
	if status != 200 || got != `{"input_tokens":7}` || h.Get("X-Gateway-Estimate") != "" || h.Get("X-Gateway-Target") != "anthropic" {
		t.Errorf("native count: %d %s estimate %q target %q", status, got, h.Get("X-Gateway-Estimate"), h.Get("X-Gateway-Target"))
	}
}

// TestTranslatedRefusals: a body the translation refuses is a 400 in
// Anthropic's envelope with no upstream call; the upstream's own errors
// come back in Anthropic's envelope with their class.
func TestTranslatedRefusals(t *testing.T) {
	c := startTranslatedChain(t)
	c.anth.set(anthropicError(503, "overloaded_error", "Overloaded"))
	status, h, body := post(t, c.url+"/v1/messages", `{"model":"claude-client","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]}`)
	if status != 400 || body != `{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content.0: an image block needs a source object"}}` {
		t.Errorf("refused body: %d %s", status, body)
	}
	if got := c.calls(); got != [3]int32{1, 0, 0} || h.Get("X-Gateway-Target") != "openai" || h.Get("X-Gateway-Attempts") != "1" {
		t.Errorf("calls %v target %q attempts %q", got, h.Get("X-Gateway-Target"), h.Get("X-Gateway-Attempts"))
	}

	// The upstream's 400 and 429, in the SDK's terms.
	for _, tc := range []struct {
		status int
		body   string
		typ    string
	}{
		{400, `{"error":{"message":"Invalid 'messages[1].content': string too long.","type":"invalid_request_error","param":null,"code":"string_above_max_length"}}`, "invalid_request_error"},
		{429, `{"error":{"message":"Rate limit reached for gpt-4o","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, "rate_limit_error"},
	} {
		c.oai.set(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body) //nolint:errcheck
		})
		_, err := c.client.Messages.New(context.Background(), messagesParams())
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != tc.status || string(ae.Type()) != tc.typ {
			t.Errorf("%d: %v", tc.status, err)
			continue
		}
		if tc.status == 400 && ae.RawJSON() != `{"type":"error","error":{"type":"invalid_request_error","message":"Invalid 'messages[1].content': string too long."}}` {
			t.Errorf("400 not in Anthropic's envelope with its message: %s", ae.RawJSON())
		}
	}
}

// TestTranslatedDroppedTools: a server tool has no chat counterpart: it
// is left out and named in X-Gateway-Dropped-Tools.
func TestTranslatedDroppedTools(t *testing.T) {
	c := startTranslatedChain(t)
	c.anth.set(anthropicError(503, "overloaded_error", "Overloaded"))
	body := `{"model":"claude-client","max_tokens":5,"messages":[{"role":"user","content":"hi"}],` +
		`"tools":[{"type":"web_search_20250305","name":"web_search"},{"name":"get_weather","input_schema":{"type":"object"}},{"type":"bash_20250124","name":"bash"}]}`
	status, h, got := post(t, c.url+"/v1/messages", body)
	if status != 200 || h.Get("X-Gateway-Dropped-Tools") != "web_search_20250305, bash_20250124" {
		t.Fatalf("%d dropped %q: %s", status, h.Get("X-Gateway-Dropped-Tools"), got)
	}
	if _, sent := c.oai.last(); strings.Contains(string(sent), "web_search") || !strings.Contains(string(sent), "get_weather") {
		t.Errorf("sent %s", sent)
	}
	// Nothing dropped: no header; a native answer: no header.
	c.anth.set(anthropicOK(false))
	if _, h, _ = post(t, c.url+"/v1/messages", body); h.Get("X-Gateway-Dropped-Tools") != "" || h.Get("X-Gateway-Target") != "anthropic" {
		t.Errorf("native answer: dropped %q target %q", h.Get("X-Gateway-Dropped-Tools"), h.Get("X-Gateway-Target"))
	}
}

// TestTranslatedHostileUpstream: an upstream that breaks the chat
// protocol gets a clear error in Anthropic's envelope or event, never a
// panic, a hang or a guessed answer.
func TestTranslatedHostileUpstream(t *testing.T) {
	c := startTranslatedChain(t)
	c.anth.set(anthropicError(503, "overloaded_error", "Overloaded"))
	sse := func(frames ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, f := range frames {
				io.WriteString(w, f) //nolint:errcheck
				w.(http.Flusher).Flush()
			}
		}
	}
	head := `data: {"id":"c","choices":[{"index":0,"delta":`
	tail := `}]}` + "\n\n"
	huge := strings.Repeat(`\"abcdefgh\",`, 200000) // 2.4 MB of arguments, streamed in one fragment
	for _, tc := range []struct {
		name  string
		serve http.HandlerFunc
		// status of the answer; for a committed stream 200 and the error
		// event's text.
		status int
		want   string
	}{
		{"invalid tool arguments", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"city\":"}}]},"finish_reason":"length"}]}`) //nolint:errcheck
		}, 502, `{"type":"error","error":{"type":"api_error","message":"upstream failed"}}`},
		{"not a chat completion", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list"}`) //nolint:errcheck
		}, 502, `"type":"api_error"`},
		{"stream: garbage after the first chunk", sse(head+`{"content":"Hel"}`+tail, "data: {not json\n\n"),
			200, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"malformed chunk in the upstream's chat stream\"}}\n\n"},
		{"stream: ends before [DONE]", sse(head + `{"content":"Hel"}` + tail),
			200, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"upstream stream ended before [DONE]\"}}\n\n"},
		{"stream: arguments cut short", sse(head+`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"a\":"}}]}`+tail,
			head+`{},"finish_reason":"length"`+tail, "data: [DONE]\n\n"),
			200, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"the upstream's tool call arguments are not a JSON object\"}}\n\n"},
		{"stream: an error before the first chunk is an attempt failure", sse(`data: {"error":{"message":"boom","type":"server_error","code":null}}` + "\n\n"),
			502, `{"type":"error","error":{"type":"api_error","message":"upstream failed"}}`},
		{"stream: huge tool arguments pass", sse(head+`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"a\":[`+huge+`1]}"}}]}`+tail,
			head+`{},"finish_reason":"tool_calls"`+tail, "data: [DONE]\n\n"),
			200, "event: message_stop\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.oai.set(tc.serve)
			stream := strings.HasPrefix(tc.name, "stream")
			body := `{"model":"claude-client","max_tokens":5,"messages":[{"role":"user","content":"hi"}]` + map[bool]string{true: `,"stream":true`}[stream] + `}`
			status, _, got := post(t, c.url+"/v1/messages", body)
			if status != tc.status || !strings.Contains(got, tc.want) {
				t.Errorf("%d %.300s\nwant %d %s", status, got, tc.status, tc.want)
			}
			if tc.status == 200 && strings.Contains(tc.want, "event: error") && !strings.HasSuffix(got, tc.want) {
				t.Errorf("the error event does not end the stream: %.300s", got)
			}
		})
	}
}
