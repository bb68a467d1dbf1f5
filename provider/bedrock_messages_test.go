package provider

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

// messagesCall is a messages call with the client headers hdr (name,
// value pairs; a name may repeat).
func messagesCall(body string, stream, count bool, hdr ...string) *Call {
	h := &fasthttp.RequestHeader{}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Add(hdr[i], hdr[i+1])
	}
	return &Call{Surface: router.SurfaceMessages, Stream: stream, CountTokens: count, Body: []byte(body), Header: h,
		Model: []byte("claude")}
}

// betasOf returns the anthropic_beta array of an InvokeModel body (nil when
// absent).
func betasOf(t *testing.T, body []byte) []string {
	t.Helper()
	var v struct {
		Betas []string `json:"anthropic_beta"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	return v.Betas
}

// Claude Code sends first-party flags Bedrock refuses; only the flags the
// target accepts reach Bedrock, each once, in the order the client sent
// them, from every copy of the header and every comma list.
func TestBedrockBetaFilter(t *testing.T) {
	const body = `{"model":"claude","max_tokens":8,"messages":[]}`
	for _, tc := range []struct {
		name    string
		allowed []string // nil: Bedrock's documented list
		body    string
		hdr     []string
		want    []string
	}{
		{"no header", nil, body, nil, nil},
		{"Claude Code's flags", nil, body,
			[]string{"anthropic-beta", "claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14,context-management-2025-06-27"},
			[]string{"interleaved-thinking-2025-05-14", "context-management-2025-06-27"}},
		{"Claude Code 2.1.197's flags with tool search: Bedrock's name for it", nil, body,
			[]string{"anthropic-beta", "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14,thinking-token-count-2026-05-13," +
				"context-management-2025-06-27,prompt-caching-scope-2026-01-05,mid-conversation-system-2026-04-07,advanced-tool-use-2025-11-20,effort-2025-11-24"},
			[]string{"context-1m-2025-08-07", "interleaved-thinking-2025-05-14", "context-management-2025-06-27", "tool-search-tool-2025-10-19", "effort-2025-11-24"}},
		{"tool search under both names: once", nil, body,
			[]string{"anthropic-beta", "tool-search-tool-2025-10-19,advanced-tool-use-2025-11-20"}, []string{"tool-search-tool-2025-10-19"}},
		{"a target listing the first-party name gets it as sent", []string{"advanced-tool-use-2025-11-20"}, body,
			[]string{"anthropic-beta", "advanced-tool-use-2025-11-20"}, []string{"advanced-tool-use-2025-11-20"}},
		{"a target without tool search gets neither name", []string{"effort-2025-11-24"}, body,
			[]string{"anthropic-beta", "advanced-tool-use-2025-11-20,effort-2025-11-24"}, []string{"effort-2025-11-24"}},
		{"only refused flags: no anthropic_beta", nil, body,
			[]string{"anthropic-beta", "claude-code-20250219, oauth-2025-04-20"}, nil},
		{"spaces and tabs around flags, empty items", nil, body,
			[]string{"anthropic-beta", " ,\tcontext-1m-2025-08-07 ,, effort-2025-11-24\t"},
			[]string{"context-1m-2025-08-07", "effort-2025-11-24"}},
		{"every copy of the header, duplicates once", nil, body,
			[]string{"anthropic-beta", "effort-2025-11-24", "Anthropic-Beta", "tool-examples-2025-10-29,effort-2025-11-24"},
			[]string{"effort-2025-11-24", "tool-examples-2025-10-29"}},
		{"case matters", nil, body, []string{"anthropic-beta", "Interleaved-Thinking-2025-05-14"}, nil},
		{"a flag inside another is not it", nil, body, []string{"anthropic-beta", "x-effort-2025-11-24,effort-2025-11-24x"}, nil},
		{"the target's own list", []string{"claude-code-20250219"}, body,
			[]string{"anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14"},
			[]string{"claude-code-20250219"}},
		{"an empty list passes none", []string{}, body,
			[]string{"anthropic-beta", "interleaved-thinking-2025-05-14"}, nil},
		{"the body's own anthropic_beta merged and filtered", nil,
			`{"model":"claude","anthropic_beta":["output-128k-2025-02-19","oauth-2025-04-20","effort-2025-11-24"],"max_tokens":8}`,
			[]string{"anthropic-beta", "effort-2025-11-24"},
			[]string{"effort-2025-11-24", "output-128k-2025-02-19"}},
		{"two anthropic_beta members in the body become one", nil,
			`{"anthropic_beta":["output-128k-2025-02-19"],"model":"claude","anthropic_beta":["effort-2025-11-24"]}`,
			nil, []string{"output-128k-2025-02-19", "effort-2025-11-24"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(req)
			ep := &Endpoint{BaseURL: "http://127.0.0.1:1", APIKey: "k", AnthropicBetas: tc.allowed}
			if err := (bedrockMessages{}).BuildRequest(req, ep, messagesCall(tc.body, false, false, tc.hdr...),
				[]byte("anthropic.claude-sonnet-4-5-20250929-v1:0")); err != nil {
				t.Fatal(err)
			}
			got := betasOf(t, req.Body())
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("anthropic_beta %q, want %q (body %s)", got, tc.want, req.Body())
			}
			if tc.want == nil && strings.Contains(string(req.Body()), "anthropic_beta") {
				t.Errorf("an empty anthropic_beta sent: %s", req.Body())
			}
			if len(req.Header.Peek("anthropic-beta")) > 0 {
				t.Error("anthropic-beta sent as a header")
			}
		})
	}
}

func TestBedrockBodyBetasMustBeStrings(t *testing.T) {
	for _, body := range []string{
		`{"model":"c","anthropic_beta":"effort-2025-11-24"}`,
		`{"model":"c","anthropic_beta":[1]}`,
		`{"model":"c","anthropic_beta":{"a":"b"}}`,
	} {
		_, err := appendInvokeBody(nil, []byte(body), nil, BedrockAnthropicBetas, false)
		var re *RequestError
		if !errors.As(err, &re) || !strings.Contains(re.Message, "anthropic_beta must be an array of strings") {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// The InvokeModel body is the client's with model and stream out and
// anthropic_version in; every other byte, nested "model" and "stream"
// keys included, is kept.
func TestBedrockInvokeBody(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		count          bool
	}{
		{"model and stream out, version in",
			`{"model":"claude","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`,
			`{"max_tokens":8,"messages":[{"role":"user","content":"hi"}],"anthropic_version":"bedrock-2023-05-31"}`, false},
		{"escaped keys are the keys they spell",
			`{"mod\u0065l":"claude","\u0073tream":false,"max_tokens":8}`,
			`{"max_tokens":8,"anthropic_version":"bedrock-2023-05-31"}`, false},
		{"the client's anthropic_version kept",
			`{"anthropic_version":"bedrock-2023-05-31","model":"claude","max_tokens":8}`,
			`{"anthropic_version":"bedrock-2023-05-31","max_tokens":8}`, false},
		{"nested model and stream, whitespace, cache_control, thinking kept byte for byte",
			"{ \"model\" : \"claude\" ,\n \"system\":[{\"type\":\"text\",\"text\":\"s\",\"cache_control\":{\"type\":\"ephemeral\"}}],\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},\"metadata\":{\"user_id\":\"u\",\"model\":\"x\"},\"tools\":[{\"name\":\"stream\",\"input_schema\":{\"type\":\"object\"}}],\"max_tokens\" : 2048 }",
			"{\"system\":[{\"type\":\"text\",\"text\":\"s\",\"cache_control\":{\"type\":\"ephemeral\"}}],\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},\"metadata\":{\"user_id\":\"u\",\"model\":\"x\"},\"tools\":[{\"name\":\"stream\",\"input_schema\":{\"type\":\"object\"}}],\"max_tokens\" : 2048,\"anthropic_version\":\"bedrock-2023-05-31\"}", false},
		{"only model", `{"model":"claude"}`, `{"anthropic_version":"bedrock-2023-05-31"}`, false},
		{"count_tokens adds max_tokens when missing",
			`{"model":"claude","messages":[]}`,
			`{"messages":[],"anthropic_version":"bedrock-2023-05-31","max_tokens":1}`, true},
		{"count_tokens keeps the client's max_tokens",
			`{"model":"claude","max_tokens":9,"messages":[]}`,
			`{"max_tokens":9,"messages":[],"anthropic_version":"bedrock-2023-05-31"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := appendInvokeBody([]byte("prefix:"), []byte(tc.in), nil, BedrockAnthropicBetas, tc.count)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix:"+tc.want {
				t.Errorf("body\n got  %s\n want %s", got[len("prefix:"):], tc.want)
			}
		})
	}
	if _, err := appendInvokeBody(nil, []byte(`[1]`), nil, nil, false); err == nil {
		t.Error("a body that is not an object accepted")
	}
}

// The request line, credentials and body of each Bedrock operation.
func TestBedrockMessagesRequests(t *testing.T) {
	const base = "https://bedrock-runtime.us-west-2.amazonaws.com"
	const body = `{"model":"claude","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name          string
		model         string
		stream, count bool
		uri           string
	}{
		{"invoke", "anthropic.claude-sonnet-4-5-20250929-v1:0", false, false, "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"},
		{"stream", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", true, false, "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"},
		{"count_tokens on a cross-region profile", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", false, true, "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens"},
		{"an ARN escaped whole", "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.claude-opus-4-1-20250805-v1:0", false, false,
			"/model/arn%3Aaws%3Abedrock%3Aus-west-2%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-opus-4-1-20250805-v1%3A0/invoke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(req)
			ep := &Endpoint{BaseURL: base, APIKey: "br-key"}
			c := messagesCall(body, tc.stream, tc.count, "anthropic-version", "2023-06-01")
			if err := (bedrockMessages{}).BuildRequest(req, ep, c, []byte(tc.model)); err != nil {
				t.Fatal(err)
			}
			if got := string(req.URI().RequestURI()); got != tc.uri {
				t.Errorf("URI %s, want %s", got, tc.uri)
			}
			wire := string(wireRequest(t, req))
			if !strings.HasPrefix(wire, "POST "+tc.uri+" HTTP/1.1\r\n") {
				t.Errorf("request line %q", wire[:strings.IndexByte(wire, '\n')])
			}
			if string(req.Host()) != "bedrock-runtime.us-west-2.amazonaws.com" || string(req.Header.Peek("Authorization")) != "Bearer br-key" ||
				string(req.Header.ContentType()) != "application/json" || len(req.Header.Peek("anthropic-version")) > 0 {
				t.Errorf("headers %s", req.Header.String())
			}
			invoke := req.Body()
			if tc.count {
				var ct struct {
					Input struct {
						InvokeModel struct {
							Body string `json:"body"`
						} `json:"invokeModel"`
					} `json:"input"`
				}
				if err := json.Unmarshal(req.Body(), &ct); err != nil {
					t.Fatal(err)
				}
				var err error
				if invoke, err = base64.StdEncoding.DecodeString(ct.Input.InvokeModel.Body); err != nil {
					t.Fatal(err)
				}
			}
			const want = `{"max_tokens":8,"messages":[{"role":"user","content":"hi"}],"anthropic_version":"bedrock-2023-05-31"}`
			if string(invoke) != want {
				t.Errorf("InvokeModel body %s", invoke)
			}
		})
	}
}

func TestBedrockMessagesRefusals(t *testing.T) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	ep := &Endpoint{BaseURL: "http://127.0.0.1:1"}
	// A model that is not Claude: no native path (yet); a clear 400.
	err := (bedrockMessages{}).BuildRequest(req, ep, messagesCall(`{"model":"m"}`, false, false), []byte("meta.llama3-70b-instruct-v1:0"))
	var re *RequestError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "only for Claude models") || !strings.Contains(re.Message, "meta.llama3") {
		t.Errorf("non-Claude model: %v", err)
	}
	c := messagesCall(`{"model":"m"}`, false, false)
	c.Surface = router.SurfaceChat
	if err := (bedrockMessages{}).BuildRequest(req, ep, c, []byte("anthropic.claude")); err == nil {
		t.Error("chat accepted")
	}
	// No credential configured: none sent.
	if err := (bedrockMessages{}).BuildRequest(req, ep, messagesCall(`{"model":"m"}`, false, false), []byte("anthropic.claude")); err != nil ||
		req.Header.Peek("Authorization") != nil {
		t.Errorf("%v %q", err, req.Header.Peek("Authorization"))
	}
}

// The adapter a bedrock target uses on each surface: InvokeModel for a
// Claude model's messages, the translation over Converse for any other.
func TestBedrockAdapterOfSurface(t *testing.T) {
	a := Lookup(Bedrock).Adapter
	claude, mistral := []byte("eu.anthropic.claude-sonnet-4-6"), []byte("mistral.mistral-large")
	if got, _ := Pick(a, &Endpoint{}, router.SurfaceMessages, false, claude); fmt.Sprintf("%T", got) != "provider.bedrockMessages" {
		t.Errorf("messages: %T", got)
	}
	if got, f := Pick(a, &Endpoint{}, router.SurfaceMessages, false, mistral); got != Adapter(bedrockMessagesViaChat) || f != FormTranslated {
		t.Errorf("messages of another model: %T %v", got, f)
	}
	if got, _ := Pick(a, &Endpoint{}, router.SurfaceChat, false, claude); fmt.Sprintf("%T", got) != "provider.bedrockAdapter" {
		t.Errorf("chat: %T", got)
	}
	if !Lookup(Bedrock).Surfaces.Has(router.SurfaceMessages) || !Lookup(Bedrock).Accepts("anthropic_betas") {
		t.Error("the provider table does not give bedrock messages and anthropic_betas")
	}
}

func TestBedrockServesMessagesNatively(t *testing.T) {
	for id, want := range map[string]bool{
		"anthropic.claude-sonnet-4-5-20250929-v1:0":                                          true,
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0":                                       true,
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0":                                   true,
		"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0": true,
		"meta.llama3-70b-instruct-v1:0":                                                      false,
		"amazon.nova-pro-v1:0":                                                               false,
		"claude-sonnet-4-5":                                                                  false,
		"anthropic":                                                                          false,
	} {
		if got := bedrockServesMessagesNatively([]byte(id)); got != want {
			t.Errorf("%s: %v, want %v", id, got, want)
		}
	}
}

// CountTokens takes foundation-model ids only.
func TestFoundationModelID(t *testing.T) {
	for in, want := range map[string]string{
		"anthropic.claude-sonnet-4-5-20250929-v1:0":                                           "anthropic.claude-sonnet-4-5-20250929-v1:0",
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0":                                        "anthropic.claude-sonnet-4-5-20250929-v1:0",
		"eu.anthropic.claude-sonnet-4-5-20250929-v1:0":                                        "anthropic.claude-sonnet-4-5-20250929-v1:0",
		"apac.anthropic.claude-3-5-sonnet-20240620-v1:0":                                      "anthropic.claude-3-5-sonnet-20240620-v1:0",
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0":                                    "anthropic.claude-sonnet-4-5-20250929-v1:0",
		"jp.anthropic.claude-sonnet-4-5-20250929-v1:0":                                        "anthropic.claude-sonnet-4-5-20250929-v1:0",
		"us-gov.anthropic.claude-3-haiku-20240307-v1:0":                                       "anthropic.claude-3-haiku-20240307-v1:0",
		"US.anthropic.claude-x":                                                               "US.anthropic.claude-x",  // not a region group
		"x.y.anthropic.claude-x":                                                              "x.y.anthropic.claude-x", // two labels
		"1.anthropic.claude-x":                                                                "1.anthropic.claude-x",   // digits
		".anthropic.claude-x":                                                                 ".anthropic.claude-x",    // no prefix
		"us.anthropic.claude-x.anthropic.y":                                                   "anthropic.claude-x.anthropic.y",
		"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-x":                      "anthropic.claude-x",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-x-v1:0": "anthropic.claude-x-v1:0",
		"anthropic.x/..":                                                                      "anthropic.x/..", // a last segment without the model is not taken
	} {
		if got := string(foundationModelID([]byte(in))); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// Bedrock's errors on the messages surface: classified as on chat, in
// Anthropic's envelope.
func TestBedrockMessagesClassifyError(t *testing.T) {
	for _, tc := range []struct {
		status   int
		errType  string
		msg      string
		class    Class
		anthType string
	}{
		{429, "ThrottlingException", "Too many requests", ClassRateLimited, "rate_limit_error"},
		{503, "ServiceUnavailableException", "Service unavailable", ClassServer, "overloaded_error"},
		{500, "InternalServerException", "boom", ClassServer, "api_error"},
		{429, "ModelNotReadyException", "model not ready", ClassServer, "rate_limit_error"},
		{408, "ModelTimeoutException", "timed out", ClassServer, "invalid_request_error"},
		{403, "AccessDeniedException", "no access", ClassAuth, "permission_error"},
		{401, "", "unauthorized", ClassAuth, "authentication_error"},
		{400, "ValidationException", "Input is too long for requested model.", ClassContextLength, "invalid_request_error"},
		{400, "ValidationException", "prompt is too long: 210000 tokens > 200000 maximum", ClassContextLength, "invalid_request_error"},
		{400, "ValidationException", "messages.0: bad", ClassClient, "invalid_request_error"},
		{404, "ResourceNotFoundException", "no such model", ClassClient, "not_found_error"},
	} {
		h := &fasthttp.ResponseHeader{}
		if tc.errType != "" {
			h.Set("X-Amzn-ErrorType", tc.errType+":http://internal.amazon.com/coral/com.amazon.bedrock/")
		}
		body, _ := json.Marshal(map[string]string{"message": tc.msg})
		cl, env := (bedrockMessages{}).ClassifyError(tc.status, h, body)
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(env, &e); err != nil {
			t.Fatalf("%s: envelope %s", tc.errType, env)
		}
		if cl != tc.class || e.Type != "error" || e.Error.Type != tc.anthType || e.Error.Message != tc.msg {
			t.Errorf("%d %s: class %v envelope %s; want %v %s", tc.status, tc.errType, cl, env, tc.class, tc.anthType)
		}
	}
	// A body with no message still names the failure.
	if _, env := (bedrockMessages{}).ClassifyError(502, nil, []byte("<html>")); !strings.Contains(string(env), `"message":"bedrock answered HTTP 502"`) {
		t.Errorf("envelope %s", env)
	}
}

func TestBedrockMessagesAnswers(t *testing.T) {
	const answer = `{"id":"msg_bdrk_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"output_tokens":1}}`
	out, err := (bedrockMessages{}).TranslateResponse([]byte("x"), []byte(answer), messagesCall(`{}`, false, false))
	if err != nil || string(out) != "x"+answer {
		t.Errorf("pass-through %s %v", out, err)
	}
	for in, want := range map[string]string{
		`{"inputTokens":1234}`:   `{"input_tokens":1234}`,
		`{"inputTokens": 0 }`:    `{"input_tokens":0}`,
		`{"inputTokens":-1}`:     "",
		`{"inputTokens":"12"}`:   "",
		`{"inputTokens":1.5}`:    "",
		`{"input_tokens":12}`:    "",
		`not json`:               "",
		`{"inputTokens":1e400}`:  "",
		`{"inputTokens":12,"x":`: "",
	} {
		out, err := (bedrockMessages{}).TranslateResponse(nil, []byte(in), messagesCall(`{}`, false, true))
		switch {
		case want == "" && err == nil:
			t.Errorf("%s: accepted as %s", in, out)
		case want != "" && (err != nil || string(out) != want):
			t.Errorf("%s: %s %v, want %s", in, out, err, want)
		}
	}
}

// docs/providers.md lists the default flags exactly as the code has them.
func TestBedrockBetasDocumented(t *testing.T) {
	if _, listed := documentedBetas(t, "Claude Code on Bedrock"); !reflect.DeepEqual(listed, BedrockAnthropicBetas) {
		t.Errorf("docs list %q\n code has %q", listed, BedrockAnthropicBetas)
	}
}

// documentedBetas returns the section of docs/providers.md headed
// "## heading" and the flags it lists as "- `flag`" items.
func documentedBetas(t *testing.T, heading string) (section string, listed []string) {
	t.Helper()
	doc, err := os.ReadFile("../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(doc), "## "+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/providers.md has no %q section", heading)
	}
	section = string(doc[i:])
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	for _, line := range strings.Split(section, "\n") {
		if rest, ok := strings.CutPrefix(line, "- `"); ok && strings.Count(rest, "`") >= 1 {
			flag := rest[:strings.IndexByte(rest, '`')]
			if betaShaped(flag) {
				listed = append(listed, flag)
			}
		}
	}
	return section, listed
}

// betaShaped reports whether s looks like a dated beta flag:
// name-YYYY-MM-DD, or name-YYYYMMDD as claude-code-20250219 is.
func betaShaped(s string) bool {
	digits := func(d string) bool {
		for _, c := range d {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	if n := len(s); n > 11 && s[n-11] == '-' && s[n-6] == '-' && s[n-3] == '-' {
		return digits(s[n-10:n-6]) && digits(s[n-5:n-3]) && digits(s[n-2:])
	}
	return len(s) > 9 && s[len(s)-9] == '-' && digits(s[len(s)-8:])
}
