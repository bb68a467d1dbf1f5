package provider

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/provider/translate"
	"github.com/switchyard/switchyard/router"
)

const messagesBody = `{"model":"claude-client","max_tokens":64,"system":"Be brief.","messages":[{"role":"user","content":"hi"}],` +
	`"tools":[{"name":"f","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}]}`

func translatedCall(stream bool) *Call {
	return &Call{Surface: router.SurfaceMessages, Stream: stream, Body: []byte(messagesBody), Model: []byte("claude-client")}
}

// TestTranslatedBuildRequest: the chat request of the member's own chat
// adapter, for the body translated with the id sent upstream (model_map
// applied once), the member's token-limit key and the dropped tools noted.
func TestTranslatedBuildRequest(t *testing.T) {
	c := translatedCall(true)
	var req fasthttp.Request
	ep := &Endpoint{BaseURL: "https://api.openai.com/v1", APIKey: "sk-test"}
	if err := openAIMessages.BuildRequest(&req, ep, c, []byte("gpt-4o-mini")); err != nil {
		t.Fatal(err)
	}
	want, _, _ := translate.MessagesToChat(nil, []byte(messagesBody),
		translate.Options{Model: []byte("gpt-4o-mini"), MaxCompletionTokens: true, FileInput: true, Stream: true})
	if string(req.Body()) != string(want) || string(req.URI().FullURI()) != "https://api.openai.com/v1/chat/completions" ||
		string(req.Header.Peek("Authorization")) != "Bearer sk-test" {
		t.Fatalf("%s %s\n%s", req.URI().FullURI(), req.Header.Peek("Authorization"), req.Body())
	}
	if got := string(openAIMessages.DroppedTools(c)); got != "web_search_20250305" {
		t.Errorf("dropped %q", got)
	}
	// A refused body is the translator's *translate.Error, as is.
	bad := &Call{Surface: router.SurfaceMessages, Body: []byte(`{"model":"m","messages":[{"role":"bot","content":"x"}]}`), Model: []byte("m")}
	var te *translate.Error
	if err := openAIMessages.BuildRequest(&req, ep, bad, []byte("m")); !errors.As(err, &te) || te.Status != 400 {
		t.Errorf("refusal: %v", err)
	}
	c.ReleaseTranslation()
	if c.HoldsTranslation() || openAIMessages.DroppedTools(c) != nil {
		t.Errorf("released translation still held")
	}
}

// TestTranslatedClassifyError: the inner adapter's class, the error in
// Anthropic's envelope.
func TestTranslatedClassifyError(t *testing.T) {
	for _, tc := range []struct {
		a      *translated
		status int
		hdr    string
		body   string
		class  Class
		want   string
	}{
		{openAIMessages, 400, "", `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			ClassContextLength, `{"type":"error","error":{"type":"invalid_request_error","message":"This model's maximum context length is 128000 tokens."}}`},
		{openAIMessages, 503, "", `upstream connect error`, ClassServer, `{"type":"error","error":{"type":"overloaded_error","message":"upstream answered HTTP 503"}}`},
		{bedrockMessagesViaChat, 429, "ThrottlingException", `{"message":"Too many requests, please wait."}`,
			ClassRateLimited, `{"type":"error","error":{"type":"rate_limit_error","message":"Too many requests, please wait."}}`},
		{geminiMessages, 404, "", `[{"error":{"code":404,"message":"models/x is not found","status":"NOT_FOUND"}}]`,
			ClassClient, `{"type":"error","error":{"type":"not_found_error","message":"upstream answered HTTP 404"}}`},
	} {
		var h fasthttp.ResponseHeader
		if tc.hdr != "" {
			h.Set("X-Amzn-Errortype", tc.hdr)
		}
		cl, env := tc.a.ClassifyError(tc.status, &h, []byte(tc.body))
		if cl != tc.class || string(env) != tc.want {
			t.Errorf("%d %s: %v %s, want %v %s", tc.status, tc.body, cl, env, tc.class, tc.want)
		}
	}
}

// chatSSE is a chat stream as an OpenAI-compatible server may frame it:
// CRLF line endings, comments, an event line, a chunk split over two data
// lines.
const chatSSE = ": keep-alive\r\n\r\n" +
	"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\r\n\r\n" +
	"event: chunk\r\ndata: {\"id\":\"c1\",\"choices\":[{\"index\":0,\r\ndata: \"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n" +
	"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n" +
	"data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n" +
	"data: [DONE]\n\n"

// drainTranslated runs a decoder to its end and returns what it wrote and its
// last error.
func drainTranslated(d StreamDecoder, in string) (string, error) {
	r := bufio.NewReader(strings.NewReader(in))
	var out []byte
	for i := 0; i < 100; i++ {
		var err error
		if out, err = d.Next(out, r); err != nil {
			return string(out), err
		}
	}
	return string(out), errors.New("no end")
}

// TestTranslatedStream: the client's events from the inner decoder's
// frames, the chat stream's usage reported for metering.
func TestTranslatedStream(t *testing.T) {
	c := translatedCall(true)
	var req fasthttp.Request
	if err := openAIMessages.BuildRequest(&req, &Endpoint{BaseURL: "http://x/v1"}, c, []byte("gpt")); err != nil {
		t.Fatal(err)
	}
	d := openAIMessages.NewStream(c)
	c.ReleaseTranslation() // the decoder keeps nothing of the Call
	out, err := drainTranslated(d, chatSSE)
	if err != io.EOF {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_c1","type":"message","role":"assistant","model":"claude-client",`,
		`"delta":{"type":"text_delta","text":"Hel"}`, `"delta":{"type":"text_delta","text":"lo"}`,
		`"usage":{"input_tokens":6,"cache_creation_input_tokens":0,"cache_read_input_tokens":4,"output_tokens":2}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Errorf("end:\n%s", out)
	}
	if u := d.(UsageReporter).Usage(); u.Prompt != 10 || u.Completion != 2 {
		t.Errorf("usage %+v", u)
	}
	ReleaseDecoder(d)
}

// TestTranslatedStreamFailures: before the first chunk an error leaves
// nothing written (the walk fails over); after it, the stream ends with
// Anthropic's error event and the error is Framed with the inner class.
func TestTranslatedStreamFailures(t *testing.T) {
	first := "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"
	for _, tc := range []struct {
		name, in string
		class    Class
		status   int
		events   bool // anything written before the error event
		msg      string
	}{
		{"error frame first", "data: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n",
			ClassRateLimited, 429, false, "Rate limit reached"},
		{"empty stream", "", ClassTransport, 502, false, "upstream stream ended before [DONE]"},
		{"[DONE] at once", "data: [DONE]\n\n", ClassTransport, 502, false, "the upstream's chat stream ended without a chunk"},
		{"error after the first chunk", first + "data: {\"error\":{\"message\":\"server had an error\",\"type\":\"server_error\",\"code\":null}}\n\n",
			ClassServer, 500, true, "server had an error"},
		{"garbage after the first chunk", first + "data: <html>\n\n", ClassTransport, 502, true, "malformed chunk in the upstream's chat stream"},
	} {
		c := translatedCall(true)
		d := openAIMessages.NewStream(c)
		r := bufio.NewReader(strings.NewReader(tc.in))
		var out []byte
		var err error
		for err == nil {
			out, err = d.Next(out, r)
		}
		var se *StreamError
		if !errors.As(err, &se) || se.Class != tc.class || se.Status != tc.status || !se.Framed {
			t.Errorf("%s: %v %+v", tc.name, err, se)
			continue
		}
		wantEnv := string(AppendAnthropicError(nil, AnthropicErrorType(tc.status), tc.msg))
		if string(se.Body) != wantEnv || !strings.HasSuffix(string(out), "event: error\ndata: "+wantEnv+"\n\n") {
			t.Errorf("%s: body %s\nout %s", tc.name, se.Body, out)
		}
		if got := strings.Contains(string(out), "message_start"); got != tc.events {
			t.Errorf("%s: events before the error %v, want %v", tc.name, got, tc.events)
		}
		ReleaseDecoder(d)
	}
}

// TestAnthropicErrorEventsAgree: the translator's error event and the
// gateway's Anthropic envelope name the same type for every status.
func TestAnthropicErrorEventsAgree(t *testing.T) {
	for status := 100; status < 600; status++ {
		msg := "m " + strconv.Itoa(status)
		got := translate.NewMessagesStream(nil).Fail(nil, status, TypeUpstream, CodeUpstreamError, msg)
		if want := "event: error\ndata: " + string(AppendAnthropicError(nil, AnthropicErrorType(status), msg)) + "\n\n"; string(got) != want {
			t.Fatalf("%d: %s, want %s", status, got, want)
		}
	}
}
