package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Claude Code 2.1.197 and Codex 0.171.0, replayed (docs/providers.md,
// Tested with): sessions the real clients ran through the gateway on
// 2026-12-07, sent again byte for byte to a gateway in front of scripted
// upstreams (clients_wire_test.go).

// chatTextStream answers a chat completions stream: one text chunk, the
// stop, the usage, [DONE].
func chatTextStream(w http.ResponseWriter, _ *http.Request, _ []byte) {
	sseEvents(w,
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Done."},"finish_reason":null}]}`+"\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`+"\n\n",
		"data: [DONE]\n\n")
}

// Claude Code sends a mid-conversation system message (role "system" in
// messages, beta mid-conversation-system-2026-04-07) from its first
// request on; a member that speaks chat only (OpenAI-compatible, Azure)
// must get it as a chat system message in place, with the tool calls and
// results of the session around it, not a 400.
func TestClaudeCodeReplayTranslated(t *testing.T) {
	fx := loadClientFixture(t, "claude-code-translated.json")
	for _, tc := range []struct{ name, provider, base, extra, path string }{
		{"openai", "openai", "/v1", "", "/v1/chat/completions"},
		{"azure classic", "azure", "", "    azure_api_version: 2024-10-21\n", "/openai/deployments/gpt-4o-deploy/chat/completions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := startAPIMock(t, "chat", func(r *http.Request) bool {
				return r.Header.Get("Authorization") == "Bearer chat-key" || r.Header.Get("api-key") == "chat-key"
			}, chatTextStream)
			g := startGatewayYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0", request_timeout: 10s}
log: {level: info, format: json, access_log: true}
strategy:
  mode: conditional
  conditions:
    - {key: model_prefix, value: claude-, target_key: chat}
targets:
  - virtual_key: chat
    provider: %s
    base_url: %s%s
    api_key: chat-key
    model_map: {claude-opus-4-8: gpt-4o-deploy}
%s`, tc.provider, up.srv.URL, tc.base, tc.extra))
			for i, r := range fx.Requests {
				resp, body := replayHTTP(t, g.addr, r)
				if resp.StatusCode != 200 || !strings.Contains(body, "event: message_stop") {
					t.Fatalf("request %d: %s\n%s", i, resp.Status, body)
				}
			}
			reqs := up.all()
			if len(reqs) != len(fx.Requests) {
				t.Fatalf("the member got %d requests, want %d", len(reqs), len(fx.Requests))
			}
			last := reqs[len(reqs)-1]
			if p, _, _ := strings.Cut(last.uri, "?"); p != tc.path {
				t.Errorf("path %s, want %s", last.uri, tc.path)
			}
			var chat struct {
				Messages []struct {
					Role       string          `json:"role"`
					Content    json.RawMessage `json:"content"`
					ToolCallID string          `json:"tool_call_id"`
					ToolCalls  []struct {
						ID       string `json:"id"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"messages"`
				Tools []json.RawMessage `json:"tools"`
			}
			if err := json.Unmarshal(last.body, &chat); err != nil {
				t.Fatalf("%v: %s", err, last.body)
			}
			var roles []string
			for _, m := range chat.Messages {
				roles = append(roles, m.Role)
			}
			if want := []string{"system", "user", "system", "assistant", "tool", "assistant", "tool"}; !reflect.DeepEqual(roles, want) {
				t.Fatalf("roles %q, want %q", roles, want)
			}
			var agents string
			_ = json.Unmarshal(chat.Messages[2].Content, &agents)
			if !strings.HasPrefix(agents, "Available agent types for the Agent tool:") {
				t.Errorf("the mid-conversation system message became %s", chat.Messages[2].Content)
			}
			for i, want := range []struct{ id, name string }{{"call_rc1", "Read"}, {"call_rc2", "Bash"}} {
				a, tool := chat.Messages[3+2*i], chat.Messages[4+2*i]
				if len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != want.id || a.ToolCalls[0].Function.Name != want.name || tool.ToolCallID != want.id {
					t.Errorf("tool round %d: call %+v, result for %q; want %s %s", i+1, a.ToolCalls, tool.ToolCallID, want.id, want.name)
				}
			}
			if len(chat.Tools) != 24 {
				t.Errorf("%d tools sent, want Claude Code's 24", len(chat.Tools))
			}
		})
	}
}

// Claude Code with ENABLE_TOOL_SEARCH=true loads an MCP tool through its
// ToolSearch tool: tools with defer_loading and tool_reference blocks,
// under the first-party beta advanced-tool-use-2025-11-20. On a
// [anthropic, bedrock] chain whose anthropic member is down, Bedrock must
// get the flag under its own name, tool-search-tool-2025-10-19, as Claude
// Code sends it in its own Bedrock mode; the rest of the body byte for
// byte.
func TestClaudeCodeReplayToolSearchOnBedrock(t *testing.T) {
	fx := loadClientFixture(t, "claude-code-tool-search.json")
	ant := startAPIMock(t, "ant", func(*http.Request) bool { return true }, jsonAnswer(503, anthropicErr("overloaded_error", "Overloaded")))
	bed := startInvokeMock(t, cbedKey)
	g := startGatewayYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0", request_timeout: 10s}
log: {level: info, format: json, access_log: true}
strategy:
  mode: conditional
  conditions:
    - {key: model_prefix, value: claude-, target_keys: [ant, bed]}
targets:
  - {virtual_key: ant, provider: anthropic, base_url: "%s", api_key: ant-key}
  - virtual_key: bed
    provider: bedrock
    base_url: "%s"
    region: us-east-1
    api_key: %s
    model_map: {claude-opus-4-8: us.anthropic.claude-opus-4-8-v1:0}
`, ant.srv.URL, bed.srv.URL, cbedKey))
	want := []string{"context-1m-2025-08-07", "interleaved-thinking-2025-05-14", "context-management-2025-06-27",
		"tool-search-tool-2025-10-19", "effort-2025-11-24"}
	for i, r := range fx.Requests {
		resp, body := replayHTTP(t, g.addr, r)
		if resp.StatusCode != 200 || resp.Header.Get("X-Gateway-Target") != "bed" || !strings.Contains(body, "event: message_stop") {
			t.Fatalf("request %d: %s target %q\n%s", i, resp.Status, resp.Header.Get("X-Gateway-Target"), body)
		}
		got := bed.last(t)
		if !strings.HasSuffix(got.uri, "/invoke-with-response-stream") {
			t.Errorf("request %d went to %s", i, got.uri)
		}
		var sent, client map[string]json.RawMessage
		if err := json.Unmarshal(got.body, &sent); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r.Body, &client); err != nil {
			t.Fatal(err)
		}
		var betas []string
		_ = json.Unmarshal(sent["anthropic_beta"], &betas)
		if !reflect.DeepEqual(betas, want) {
			t.Errorf("request %d: Bedrock got anthropic_beta %q, want %q", i, betas, want)
		}
		// Every other member as the client sent it.
		delete(sent, "anthropic_beta")
		delete(sent, "anthropic_version")
		delete(client, "model")
		delete(client, "stream")
		for k, v := range client {
			if !bytes.Equal(compact(t, sent[k]), compact(t, v)) {
				t.Errorf("request %d: member %s changed on the way to Bedrock", i, k)
			}
		}
		if len(sent) != len(client) {
			t.Errorf("request %d: Bedrock got %d members, the client sent %d besides model and stream", i, len(sent), len(client))
		}
	}
	// The fixture holds what the flag is for.
	if b := string(compact(t, fx.Requests[1].Body)); !strings.Contains(b, `"type":"tool_reference"`) || !strings.Contains(b, `"defer_loading":true`) {
		t.Error("the second request holds no tool_reference block or deferred tool")
	}
}

// The same session on a [anthropic, vertex] chain whose anthropic member
// is down: Vertex refuses a request naming a beta flag it does not know,
// so it must get, in one anthropic-beta header, only the flags it accepts
// (tool search under its Vertex name, as Claude Code sends it in its own
// Vertex mode), and every body member as the client sent it but model
// (docs/providers.md, Claude Code on Vertex).
func TestClaudeCodeReplayToolSearchOnVertex(t *testing.T) {
	fx := loadClientFixture(t, "claude-code-tool-search.json")
	ant := startAPIMock(t, "ant", func(*http.Request) bool { return true }, jsonAnswer(503, anthropicErr("overloaded_error", "Overloaded")))
	// No credential configured: a request carrying any Authorization or
	// x-api-key (the client's) is refused.
	noCredential := func(r *http.Request) bool {
		return r.Header.Get("Authorization") == "" && r.Header.Get("x-api-key") == ""
	}
	vtx := startAPIMock(t, "vtx", noCredential, func(w http.ResponseWriter, _ *http.Request, _ []byte) { claudeTurn(w, "v1", "Done.", "", "") })
	g := startGatewayYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0", request_timeout: 10s}
log: {level: info, format: json, access_log: true}
strategy:
  mode: conditional
  conditions:
    - {key: model_prefix, value: claude-, target_keys: [ant, vtx]}
targets:
  - {virtual_key: ant, provider: anthropic, base_url: "%s", api_key: ant-key}
  - {virtual_key: vtx, provider: vertex, base_url: "%s", project: eu-proj-123, region: europe-west4}
`, ant.srv.URL, vtx.srv.URL))
	const want = "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14,context-management-2025-06-27," +
		"tool-search-tool-2025-10-19,effort-2025-11-24"
	for i, r := range fx.Requests {
		resp, body := replayHTTP(t, g.addr, r)
		if resp.StatusCode != 200 || resp.Header.Get("X-Gateway-Target") != "vtx" || !strings.Contains(body, "event: message_stop") {
			t.Fatalf("request %d: %s target %q\n%s", i, resp.Status, resp.Header.Get("X-Gateway-Target"), body)
		}
		got := vtx.last(t)
		if got.uri != "/v1/projects/eu-proj-123/locations/europe-west4/publishers/anthropic/models/claude-opus-4-8:streamRawPredict" {
			t.Errorf("request %d went to %s", i, got.uri)
		}
		if betas := got.header.Values("anthropic-beta"); len(betas) != 1 || betas[0] != want {
			t.Errorf("request %d: Vertex got anthropic-beta %q\nwant %q", i, betas, want)
		}
		if v := got.header.Values("anthropic-version"); v != nil {
			t.Errorf("request %d: anthropic-version %q sent (Vertex reads the body's)", i, v)
		}
		var sent, client map[string]json.RawMessage
		if err := json.Unmarshal(got.body, &sent); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r.Body, &client); err != nil {
			t.Fatal(err)
		}
		if v := string(sent["anthropic_version"]); v != `"vertex-2023-10-16"` {
			t.Errorf("request %d: anthropic_version %s", i, v)
		}
		// Every other member as the client sent it, stream included.
		delete(sent, "anthropic_version")
		delete(client, "model")
		for k, v := range client {
			if !bytes.Equal(compact(t, sent[k]), compact(t, v)) {
				t.Errorf("request %d: member %s changed on the way to Vertex", i, k)
			}
		}
		if len(sent) != len(client) {
			t.Errorf("request %d: Vertex got %d members, the client sent %d besides model", i, len(sent), len(client))
		}
	}
}

// claudeTurn answers a Messages stream with message id msg_<id>: text, and
// when tool is set a tool_use block (id toolu_<id>) with input args.
func claudeTurn(w http.ResponseWriter, id, text, tool, args string) {
	ev := []string{
		namedEvent("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_" + id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 20, "output_tokens": 1}}}),
		namedEvent("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}),
		namedEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}}),
		namedEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}),
	}
	stop := "end_turn"
	if tool != "" {
		stop = "tool_use"
		ev = append(ev,
			namedEvent("content_block_start", map[string]any{"type": "content_block_start", "index": 1,
				"content_block": map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": tool, "input": map[string]any{}}}),
			namedEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": 1,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": args}}),
			namedEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": 1}))
	}
	sseEvents(w, append(ev,
		namedEvent("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": 7}}),
		namedEvent("message_stop", map[string]any{"type": "message_stop"}))...)
}

// codexSocketReplay is a recorded Codex WebSocket session replayed to a
// gateway pinning its model to Claude on a scripted Anthropic.
type codexSocketReplay struct {
	ant     *apiMock
	g       *rawGateway
	outputs [][]map[string]any // each response's output items
}

// replayCodexSocket replays fixture's socket. Anthropic answers turn k
// (the tool results so far) with turns[k]: a tool call, by its chat name,
// and its arguments, with ids msg_rc<k+1> and toolu_rc<k+1> as when
// recorded; past the script, with text. Every response must complete;
// the ids Codex continued from must be the gateway's (the warm-up's,
// random, is mapped).
func replayCodexSocket(t *testing.T, fixture, model string, turns [][2]string) *codexSocketReplay {
	t.Helper()
	fx := loadClientFixture(t, fixture)
	ant := startAPIMock(t, "ant", func(r *http.Request) bool { return r.Header.Get("x-api-key") == "ant-key" },
		func(w http.ResponseWriter, _ *http.Request, body []byte) {
			k := strings.Count(string(body), `"type":"tool_result"`)
			id := fmt.Sprintf("rc%d", k+1)
			if k < len(turns) {
				claudeTurn(w, id, "Let me look.", turns[k][0], turns[k][1])
				return
			}
			claudeTurn(w, id, "Done. The tool said: echo says: ping", "", "")
		})
	g := startGatewayYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0", request_timeout: 10s}
log: {level: info, format: json, access_log: true}
auth:
  keys:
    - {name: codex, key: sk-client-fake}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: %s, target_key: ant}
targets:
  - {virtual_key: ant, provider: anthropic, base_url: "%s", api_key: ant-key, model_map: {gpt-5.5: claude-sonnet-4-5}}
`, model, ant.srv.URL))
	up := fx.Requests[0]
	if up.Method != "GET" || up.Target != "/v1/responses" || len(up.Frames) < 2 {
		t.Fatalf("fixture: %s %s with %d messages", up.Method, up.Target, len(up.Frames))
	}
	rp := &codexSocketReplay{ant: ant, g: g}
	s := openClientSocket(t, g.addr, up)
	ids := map[string]string{} // recorded response id → the gateway's
	for i, f := range up.Frames {
		msg := compact(t, f)
		for rec, got := range ids {
			msg = bytes.ReplaceAll(msg, []byte(`"`+rec+`"`), []byte(`"`+got+`"`))
		}
		s.send(t, msg)
		events := s.readResponse(t)
		last := events[len(events)-1]
		if last["type"] != "response.completed" {
			t.Fatalf("response %d ended with %v", i, last)
		}
		var resp struct {
			ID     string           `json:"id"`
			Output []map[string]any `json:"output"`
		}
		b, _ := json.Marshal(last["response"])
		_ = json.Unmarshal(b, &resp)
		rp.outputs = append(rp.outputs, resp.Output)
		if i+1 < len(up.Frames) {
			var next struct {
				Previous string `json:"previous_response_id"`
			}
			_ = json.Unmarshal(up.Frames[i+1], &next)
			if i > 0 && next.Previous != resp.ID {
				t.Errorf("response %d: id %q, Codex continued from %q", i, resp.ID, next.Previous)
			}
			ids[next.Previous] = resp.ID
		}
	}
	if n, want := ant.n(), len(up.Frames)-1; n != want {
		t.Fatalf("Anthropic got %d requests, want %d (the warm-up makes none)", n, want)
	}
	// One access line per bridged response (a stream's line is written
	// when its writer ends, which may be just after the client read the
	// last event), web_search alone named as dropped.
	waitFor(t, 5*time.Second, "an access line per response", func() bool {
		return strings.Count(g.logs.String(), `"surface":"responses"`) >= len(up.Frames)-1
	})
	if n := strings.Count(g.logs.String(), `"dropped_tools":"web_search"`); n != len(up.Frames)-1 {
		t.Errorf("%d access lines name web_search alone as dropped, want %d:\n%s", n, len(up.Frames)-1, g.logs)
	}
	return rp
}

// anthropicShape lists a Messages request's blocks as role:type:id/name.
func anthropicShape(t *testing.T, body []byte) (shape []string, tools []string) {
	t.Helper()
	var conv struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string          `json:"type"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
			} `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &conv); err != nil {
		t.Fatal(err)
	}
	for _, m := range conv.Messages {
		for _, c := range m.Content {
			shape = append(shape, m.Role+":"+c.Type+":"+c.ID+c.ToolUseID+c.Name)
		}
	}
	for _, tool := range conv.Tools {
		tools = append(tools, tool.Name)
	}
	return shape, tools
}

// findItem returns the first output item of type typ.
func findItem(items []map[string]any, typ string) map[string]any {
	for _, it := range items {
		if it["type"] == typ {
			return it
		}
	}
	return nil
}

// Codex over the Responses WebSocket, pinned to Claude on Anthropic: its
// warm-up, then three turns on one socket, each continuing the last with
// previous_response_id and only the new items. Anthropic gets each turn's
// whole conversation, tool calls and results paired; the MCP tool (sent
// in Codex's namespace mcp__echo) comes back in its namespace.
func TestCodexReplayWebSocket(t *testing.T) {
	rp := replayCodexSocket(t, "codex-websocket.json", "claude-sonnet-4-5", [][2]string{
		{"exec_command", `{"cmd":"cat hello.txt","workdir":"/tmp/rc/work-codex"}`},
		{"mcp__echo--say", `{"text":"ping"}`},
	})
	shape, _ := anthropicShape(t, rp.ant.last(t).body)
	want := []string{"user:text:", "user:text:", "assistant:text:", "assistant:tool_use:toolu_rc1exec_command", "user:tool_result:toolu_rc1",
		"assistant:text:", "assistant:tool_use:toolu_rc2mcp__echo--say", "user:tool_result:toolu_rc2"}
	if !reflect.DeepEqual(shape, want) {
		t.Errorf("Anthropic's third request:\n got  %q\n want %q", shape, want)
	}
	// The MCP tool's call, as OpenAI gives it: name and namespace apart.
	if call := findItem(rp.outputs[2], "function_call"); call["name"] != "say" || call["namespace"] != "mcp__echo" || call["call_id"] != "toolu_rc2" {
		t.Errorf("the MCP call came back as %v", call)
	}
}

// Codex on a tool-search model (gpt-5.5, mapped to Claude) sends no MCP
// tool: it offers its own tool_search ("execution":"client") and sends the
// tools it loads back in a tool_search_output. The search must reach
// Claude as a tool, its call come back as a tool_search_call Codex runs,
// and the loaded MCP tool join the tools so that Claude can call it.
func TestCodexReplayToolSearch(t *testing.T) {
	rp := replayCodexSocket(t, "codex-tool-search.json", "gpt-5.5", [][2]string{
		{"tool_search--client", `{"limit":8,"query":"echo say"}`},
		{"mcp__echo--say", `{"text":"ping"}`},
	})
	reqs := rp.ant.all()
	_, tools := anthropicShape(t, reqs[0].body)
	if !slices.Contains(tools, "tool_search--client") || slices.Contains(tools, "mcp__echo--say") {
		t.Errorf("first turn's tools %q: want the search, not yet the MCP tool", tools)
	}
	search := findItem(rp.outputs[1], "tool_search_call")
	if args, _ := json.Marshal(search["arguments"]); search["execution"] != "client" || search["call_id"] != "toolu_rc1" || string(args) != `{"limit":8,"query":"echo say"}` {
		t.Fatalf("the search came back as %v", search)
	}
	shape, tools := anthropicShape(t, reqs[2].body)
	if !slices.Contains(tools, "mcp__echo--say") {
		t.Errorf("the loaded MCP tool is not among the tools: %q", tools)
	}
	want := []string{"user:text:", "user:text:", "assistant:text:", "assistant:tool_use:toolu_rc1tool_search--client", "user:tool_result:toolu_rc1",
		"assistant:text:", "assistant:tool_use:toolu_rc2mcp__echo--say", "user:tool_result:toolu_rc2"}
	if !reflect.DeepEqual(shape, want) {
		t.Errorf("Anthropic's third request:\n got  %q\n want %q", shape, want)
	}
	if !strings.Contains(string(reqs[2].body), `"Tools loaded: mcp__echo--say."`) {
		t.Errorf("the search's result does not name the loaded tool: %s", reqs[2].body)
	}
	if call := findItem(rp.outputs[2], "function_call"); call["name"] != "say" || call["namespace"] != "mcp__echo" {
		t.Errorf("the MCP call came back as %v", call)
	}
}
