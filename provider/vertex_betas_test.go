package provider

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

// claudeCode2_1_197 is the anthropic-beta header Claude Code 2.1.197 sends
// a gateway it takes for Anthropic, with tool search on
// (e2e/testdata/clients/claude-code-tool-search.json).
const claudeCode2_1_197 = "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14,thinking-token-count-2026-05-13," +
	"context-management-2025-06-27,prompt-caching-scope-2026-01-05,mid-conversation-system-2026-04-07,advanced-tool-use-2025-11-20,effort-2025-11-24"

// vertexRequest builds the rawPredict request for a messages call on a
// vertex target whose anthropic_betas is allowed (nil: the default).
func vertexRequest(t *testing.T, allowed []string, c *Call) (*fasthttp.Request, error) {
	t.Helper()
	req := fasthttp.AcquireRequest()
	t.Cleanup(func() { fasthttp.ReleaseRequest(req) })
	ep := &Endpoint{BaseURL: "http://127.0.0.1:1", Project: "p", Region: "europe-west4", AnthropicBetas: allowed}
	return req, (vertexMessages{}).BuildRequest(req, ep, c, []byte("claude-opus-4-8"))
}

// Claude Code sends first-party flags Vertex refuses ("Unexpected
// value(s) … for the anthropic-beta header"); only the flags the target
// accepts reach Vertex, in one anthropic-beta header, under Vertex's name,
// each once, in the order the client sent them; count_tokens gets only
// those Vertex's count-tokens takes.
func TestVertexBetaFilter(t *testing.T) {
	const body = `{"model":"claude","max_tokens":8,"messages":[]}`
	for _, tc := range []struct {
		name    string
		allowed []string // nil: the Vertex default
		count   bool
		body    string
		hdr     []string
		want    string // the anthropic-beta header Vertex gets; "" none
	}{
		{"no header", nil, false, body, nil, ""},
		{"Claude Code 2.1.197's flags with tool search", nil, false, body,
			[]string{"anthropic-beta", claudeCode2_1_197},
			"claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14,context-management-2025-06-27,tool-search-tool-2025-10-19,effort-2025-11-24"},
		{"what Claude Code sends in its own Vertex mode passes whole", nil, false, body,
			[]string{"anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,web-search-2025-03-05,effort-2025-11-24"},
			"claude-code-20250219,interleaved-thinking-2025-05-14,web-search-2025-03-05,effort-2025-11-24"},
		{"first-party flags Vertex refuses: no header", nil, false, body,
			[]string{"anthropic-beta", "oauth-2025-04-20,prompt-caching-scope-2026-01-05,thinking-token-count-2026-05-13," +
				"mid-conversation-system-2026-04-07,fine-grained-tool-streaming-2025-05-14,structured-outputs-2025-12-15," +
				"token-efficient-tools-2025-02-19,output-128k-2025-02-19,tool-examples-2025-10-29,code-execution-2025-08-25"}, ""},
		{"tool search under both names: once", nil, false, body,
			[]string{"anthropic-beta", "tool-search-tool-2025-10-19,advanced-tool-use-2025-11-20"}, "tool-search-tool-2025-10-19"},
		{"a target listing the first-party name gets it as sent", []string{"advanced-tool-use-2025-11-20"}, false, body,
			[]string{"anthropic-beta", "advanced-tool-use-2025-11-20"}, "advanced-tool-use-2025-11-20"},
		{"a target without tool search gets neither name", []string{"effort-2025-11-24"}, false, body,
			[]string{"anthropic-beta", "advanced-tool-use-2025-11-20,effort-2025-11-24"}, "effort-2025-11-24"},
		{"spaces and tabs around flags, empty items", nil, false, body,
			[]string{"anthropic-beta", " ,\tcontext-1m-2025-08-07 ,, effort-2025-11-24\t"}, "context-1m-2025-08-07,effort-2025-11-24"},
		{"every copy of the header, duplicates once", nil, false, body,
			[]string{"anthropic-beta", "effort-2025-11-24", "Anthropic-Beta", "web-search-2025-03-05,effort-2025-11-24"},
			"effort-2025-11-24,web-search-2025-03-05"},
		{"case matters", nil, false, body, []string{"anthropic-beta", "Interleaved-Thinking-2025-05-14"}, ""},
		{"a flag inside another is not it", nil, false, body, []string{"anthropic-beta", "x-effort-2025-11-24,effort-2025-11-24x"}, ""},
		{"the target's own list", []string{"compact-2026-01-12", "claude-code-20250219"}, false, body,
			[]string{"anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,compact-2026-01-12"},
			"claude-code-20250219,compact-2026-01-12"},
		{"an empty list passes none", []string{}, false, body,
			[]string{"anthropic-beta", "interleaved-thinking-2025-05-14"}, ""},
		{"the body's own anthropic_beta joins the header", nil, false,
			`{"model":"claude","anthropic_beta":["web-search-2025-03-05","oauth-2025-04-20","effort-2025-11-24"],"max_tokens":8}`,
			[]string{"anthropic-beta", "effort-2025-11-24"}, "effort-2025-11-24,web-search-2025-03-05"},
		{"two anthropic_beta members, one escaped", nil, false,
			`{"anthropic_beta":["context-1m-2025-08-07"],"model":"claude","anthropic\u005fbeta":["advanced-tool-use-2025-11-20"]}`,
			nil, "context-1m-2025-08-07,tool-search-tool-2025-10-19"},
		{"count_tokens: the flags Vertex's count-tokens takes", nil, true, body,
			[]string{"anthropic-beta", claudeCode2_1_197},
			"claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27"},
		{"count_tokens: of those, the target's", []string{"interleaved-thinking-2025-05-14", "context-1m-2025-08-07"}, true, body,
			[]string{"anthropic-beta", claudeCode2_1_197}, "interleaved-thinking-2025-05-14"},
		{"count_tokens: web search and 1M context are not sent", nil, true, body,
			[]string{"anthropic-beta", "context-1m-2025-08-07,web-search-2025-03-05"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := vertexRequest(t, tc.allowed, messagesCall(tc.body, false, tc.count, tc.hdr...))
			if err != nil {
				t.Fatal(err)
			}
			if got := req.Header.PeekAll("anthropic-beta"); len(got) > 1 || tc.want == "" && len(got) != 0 ||
				tc.want != "" && (len(got) != 1 || string(got[0]) != tc.want) {
				t.Errorf("anthropic-beta %q, want %q", got, tc.want)
			}
			if strings.Contains(string(req.Body()), "anthropic_beta") || strings.Contains(string(req.Body()), `anthropic\u005fbeta`) {
				t.Errorf("anthropic_beta left in the body: %s", req.Body())
			}
		})
	}
}

func TestVertexBodyBetasMustBeStrings(t *testing.T) {
	for _, body := range []string{
		`{"model":"c","anthropic_beta":"effort-2025-11-24"}`,
		`{"model":"c","anthropic_beta":[1]}`,
		`{"model":"c","anthropic_beta":{"a":"b"}}`,
	} {
		_, err := vertexRequest(t, nil, messagesCall(body, false, false))
		var re *RequestError
		if !errors.As(err, &re) || !strings.Contains(re.Message, "anthropic_beta must be an array of strings") {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// Filtering the flags changes nothing else: the body is the client's less
// model and anthropic_beta, plus anthropic_version, byte for byte; nested
// "anthropic_beta" and "model" keys stay.
func TestVertexMessagesBodyWithBetas(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"model":"claude","anthropic_beta":["effort-2025-11-24"],"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":{"anthropic_beta":1,"model":2}}]}`,
			`{"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":{"anthropic_beta":1,"model":2}}],"anthropic_version":"vertex-2023-10-16"}`},
		{`{"anthropic_version":"mine","anthropic_beta":[],"max_tokens":8}`, `{"anthropic_version":"mine","max_tokens":8}`},
		{`{"anthropic\u005fversion":"mine"}`, `{"anthropic\u005fversion":"mine"}`},
	} {
		req, err := vertexRequest(t, nil, messagesCall(tc.in, false, false, "anthropic-beta", "effort-2025-11-24"))
		if err != nil || string(req.Body()) != tc.want {
			t.Errorf("%s:\n got %s %v\nwant %s", tc.in, req.Body(), err, tc.want)
		}
	}
}

// Chat translated for a Claude model on Vertex builds its Messages body
// itself and needs no beta: none is sent, whatever the client's headers.
func TestVertexChatSendsNoBetas(t *testing.T) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	c := messagesCall(`{"model":"claude","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, false, false,
		"anthropic-beta", claudeCode2_1_197)
	c.Surface = router.SurfaceChat
	ep := &Endpoint{BaseURL: "http://127.0.0.1:1", Project: "p", Region: "europe-west4"}
	if err := (vertexClaude{}).BuildRequest(req, ep, c, []byte("claude-opus-4-8")); err != nil {
		t.Fatal(err)
	}
	if b := req.Header.Peek("anthropic-beta"); b != nil {
		t.Errorf("anthropic-beta %q sent on translated chat", b)
	}
	var sent map[string]json.RawMessage
	if err := json.Unmarshal(req.Body(), &sent); err != nil || sent["anthropic_beta"] != nil || string(sent["anthropic_version"]) != `"vertex-2023-10-16"` {
		t.Errorf("body %s (%v)", req.Body(), err)
	}
}

// docs/providers.md lists the Vertex default and the count-tokens flags
// exactly as the code has them, and the table lets vertex targets set
// anthropic_betas.
func TestVertexBetasDocumented(t *testing.T) {
	section, listed := documentedBetas(t, "Claude Code on Vertex")
	if !reflect.DeepEqual(listed, VertexAnthropicBetas) {
		t.Errorf("docs list %q\n code has %q", listed, VertexAnthropicBetas)
	}
	_, count, ok := strings.Cut(section, "**count_tokens.**")
	count, _, _ = strings.Cut(count, "\n\n")
	var named []string
	for _, part := range strings.Split(count, "`")[1:] {
		if betaShaped(part) {
			named = append(named, part)
		}
	}
	if !ok || !reflect.DeepEqual(named[:min(len(named), len(VertexCountTokensBetas))], VertexCountTokensBetas) {
		t.Errorf("the count_tokens paragraph names %q first, the code has %q", named, VertexCountTokensBetas)
	}
	if !Lookup(Vertex).Accepts("anthropic_betas") {
		t.Error("vertex targets cannot set anthropic_betas")
	}
}
