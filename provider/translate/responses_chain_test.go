package translate_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/provider/translate"
	"github.com/switchyard/switchyard/router"
)

// The chat form the Responses translator writes is the chat form the
// gateway's own chat adapters take: Codex's requests, translated, build
// Anthropic and Bedrock requests that carry the conversation, and the
// answers those adapters make come back as Responses answers.

func codexChat(t *testing.T, name string, stream bool) []byte {
	t.Helper()
	in, err := os.ReadFile(filepath.Join("testdata", "responses", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	chat, _, err := translate.ResponsesToChat(nil, in, translate.Options{Model: []byte("claude-sonnet-4-5"), Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	return chat
}

func TestResponsesChainAnthropicRequest(t *testing.T) {
	for _, stream := range []bool{false, true} {
		chat := codexChat(t, "codex_tool_turn", stream)
		for _, name := range []string{provider.Anthropic, provider.Bedrock} {
			req := fasthttp.AcquireRequest()
			c := &provider.Call{Surface: router.SurfaceChat, Stream: stream, Body: chat, Model: []byte("claude-sonnet-4-5")}
			ep := &provider.Endpoint{BaseURL: "https://upstream.test", APIKey: "k"}
			if err := provider.Lookup(name).Adapter.BuildRequest(req, ep, c, []byte("claude-sonnet-4-5")); err != nil {
				t.Fatalf("%s refused the translated Codex request: %v\n%s", name, err, chat)
			}
			body := string(req.Body())
			for _, want := range []string{
				"You are Codex", "permissions instructions", // instructions and developer text, in the system prompt
				"call_a1", "call_a3", "call_a4", // tool call ids kept through both translations
				"apply_patch--freeform", "mcp__github--create_issue", "*** Begin Patch",
				"iVBORw0KGgo=", // the view_image output's image
				"Does it build?",
			} {
				if !strings.Contains(body, want) {
					t.Errorf("%s request lacks %q:\n%s", name, want, body)
				}
			}
			fasthttp.ReleaseRequest(req)
		}
	}
}

func TestResponsesChainAnthropicAnswer(t *testing.T) {
	anthropic := provider.Lookup(provider.Anthropic).Adapter
	c := &provider.Call{Surface: router.SurfaceChat, Body: codexChat(t, "codex_first_turn", false), Model: []byte("claude-sonnet-4-5")}
	chat, err := anthropic.TranslateResponse(nil, []byte(`{"id":"msg_01XY","type":"message","role":"assistant","model":"claude-sonnet-4-5",
		"content":[{"type":"text","text":"Patching the total."},
			{"type":"tool_use","id":"toolu_01","name":"apply_patch--freeform","input":{"input":"*** Begin Patch\n*** End Patch\n"}},
			{"type":"tool_use","id":"toolu_02","name":"mcp__github--create_issue","input":{"repo":"dev/shop","title":"t"}}],
		"stop_reason":"tool_use","usage":{"input_tokens":100,"cache_read_input_tokens":900,"output_tokens":40}}`), c)
	if err != nil {
		t.Fatal(err)
	}
	out, err := translate.ChatToResponses(nil, chat, []byte("gpt-5.1-codex"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		ID     string
		Output []struct {
			Type, Name, Namespace, Input string
			CallID                       string `json:"call_id"`
		}
		Usage struct {
			InputTokens        int64 `json:"input_tokens"`
			InputTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		}
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.ID != "resp_msg_01XY" || len(r.Output) != 3 || r.Output[1].Type != "custom_tool_call" || r.Output[1].Name != "apply_patch" ||
		r.Output[1].Input != "*** Begin Patch\n*** End Patch\n" || r.Output[1].CallID != "toolu_01" ||
		r.Output[2].Namespace != "mcp__github" || r.Output[2].Name != "create_issue" {
		t.Fatalf("answer %s", out)
	}
	if r.Usage.InputTokens < 1000 || r.Usage.InputTokensDetails.CachedTokens != 900 {
		t.Fatalf("usage %s", out)
	}
}

// An Anthropic stream, through the anthropic adapter's chat stream and the
// Responses stream translator, ends as Codex expects: a custom tool call
// item for apply_patch and response.completed with usage.
func TestResponsesChainAnthropicStream(t *testing.T) {
	sse := strings.Join([]string{
		`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_01S","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Patching."}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_9","name":"apply_patch--freeform","input":{}}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"input\":\"*** Begin"}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" Patch\\n\"}"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":1}`,
		`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}`,
		`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
	}, "\n\n") + "\n\n"
	chatBody := codexChat(t, "codex_first_turn", true)
	dec := provider.Lookup(provider.Anthropic).Adapter.NewStream(&provider.Call{Surface: router.SurfaceChat, Stream: true, Body: chatBody, Model: []byte("claude-sonnet-4-5")})
	rd := bufio.NewReader(strings.NewReader(sse))
	s := translate.NewResponsesStream([]byte("gpt-5.1-codex"))
	var out []byte
	for {
		frames, err := dec.Next(nil, rd)
		for _, f := range bytes.Split(frames, []byte("\n\n")) {
			data, ok := bytes.CutPrefix(f, []byte("data: "))
			if !ok {
				continue
			}
			if string(data) == "[DONE]" {
				var derr error
				if out, derr = s.Done(out); derr != nil {
					t.Fatal(derr)
				}
				continue
			}
			var cerr error
			if out, cerr = s.Chunk(out, data); cerr != nil {
				t.Fatalf("chunk %s: %v", data, cerr)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	blocks := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
	last := blocks[len(blocks)-1]
	if !strings.HasPrefix(last, "event: response.completed\n") {
		t.Fatalf("last event %s", last)
	}
	var ev struct {
		Response struct {
			Output []struct{ Type, Name, Input string }
			Usage  struct {
				InputTokens  int64 `json:"input_tokens"`
				OutputTokens int64 `json:"output_tokens"`
			}
		}
	}
	_, data, _ := strings.Cut(last, "data: ")
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		t.Fatal(err)
	}
	o := ev.Response.Output
	if len(o) != 2 || o[1].Type != "custom_tool_call" || o[1].Name != "apply_patch" || o[1].Input != "*** Begin Patch\n" ||
		ev.Response.Usage.InputTokens != 100 || ev.Response.Usage.OutputTokens != 30 {
		t.Fatalf("completed %s", data)
	}
}
