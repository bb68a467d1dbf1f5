package translate

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// sameJSON fails t unless got is valid JSON holding the same value as want.
func sameJSON(t *testing.T, name string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: output is not JSON (%v):\n%s", name, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", name, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got  %s\n want %s", name, got, want)
	}
}

const (
	oneUser = `"messages":[{"role":"user","content":"hi"}]`
	chatHi  = `"messages":[{"role":"user","content":"hi"}]`
)

// TestMessagesToChat reads like the mapping table of docs/providers.md,
// Translation: each row an Anthropic request and the chat request it
// becomes.
func TestMessagesToChat(t *testing.T) {
	openai := Options{MaxCompletionTokens: true, FileInput: true}
	for _, tc := range []struct {
		name string
		o    Options
		in   string
		want string
	}{
		{"system as a string becomes a system message", Options{},
			`{"model":"c","system":"Be brief.",` + oneUser + `}`,
			`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]}`},
		{"system as blocks: one system message, joined by a blank line; cache_control dropped", Options{},
			`{"model":"c","system":[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"Rules.","cache_control":{"type":"ephemeral"}}],` + oneUser + `}`,
			`{"model":"m","messages":[{"role":"system","content":"You are Claude Code.\n\nRules."},{"role":"user","content":"hi"}]}`},
		{"a system message in the conversation (Claude Code's mid-conversation system) is a system message in place", Options{},
			`{"model":"c","system":"S","messages":[{"role":"user","content":"hi"},{"role":"system","content":"Agents: Explore."},` +
				`{"role":"assistant","content":"ok"},{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]},` +
				`{"role":"user","content":"go"}]}`,
			`{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"hi"},{"role":"system","content":"Agents: Explore."},` +
				`{"role":"assistant","content":"ok"},{"role":"system","content":"a\n\nb"},{"role":"user","content":"go"}]}`},
		{"text blocks: one is a string, several are text parts", Options{},
			`{"model":"c","messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"c"},{"type":"text","text":"d","citations":[]}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"c"},{"type":"text","text":"d"}]}]}`},
		{"image blocks (base64 or url) become image_url parts; a file id is dropped", Options{},
			`{"model":"c","messages":[{"role":"user","content":[{"type":"text","text":"what?"},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},` +
				`{"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}},` +
				`{"type":"image","source":{"type":"file","file_id":"file_011"}}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what?"},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},` +
				`{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}}]}]}`},
		{"tool_use becomes assistant tool_calls, ids kept, input as the arguments string", Options{},
			`{"model":"c","messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":[` +
				`{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris","days":[1,2]}},` +
				`{"type":"tool_use","id":"toolu_02","name":"get_time","input":{}}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":"Let me look.","tool_calls":[` +
				`{"id":"toolu_01","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"days\":[1,2]}"}},` +
				`{"id":"toolu_02","type":"function","function":{"name":"get_time","arguments":"{}"}}]}]}`},
		{"tool_use alone: content null", Options{},
			`{"model":"c","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"a":"x\"y"}}]}]}`,
			`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"a\":\"x\\\"y\"}"}}]}]}`},
		{"tool_result blocks become tool messages in order; the rest of the turn follows as a user message", Options{},
			`{"model":"c","messages":[{"role":"user","content":[` +
				`{"type":"tool_result","tool_use_id":"toolu_01","content":"18C, sunny"},` +
				`{"type":"tool_result","tool_use_id":"toolu_02","content":[{"type":"text","text":"line 1"},{"type":"text","text":"line 2"}],"is_error":true},` +
				`{"type":"tool_result","tool_use_id":"toolu_03"},` +
				`{"type":"text","text":"and tomorrow?"}]}]}`,
			`{"model":"m","messages":[{"role":"tool","tool_call_id":"toolu_01","content":"18C, sunny"},` +
				`{"role":"tool","tool_call_id":"toolu_02","content":"line 1\nline 2"},` +
				`{"role":"tool","tool_call_id":"toolu_03","content":""},` +
				`{"role":"user","content":"and tomorrow?"}]}`},
		{"images in a tool_result go to the user message after the tool messages", Options{},
			`{"model":"c","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[` +
				`{"type":"text","text":"screenshot:"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]}]}]}`,
			`{"model":"m","messages":[{"role":"tool","tool_call_id":"t1","content":"screenshot:"},` +
				`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}]}]}`},
		{"tools (input_schema) become function tools; server tools are dropped", Options{},
			`{"model":"c",` + oneUser + `,"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"cache_control":{"type":"ephemeral"}},` +
				`{"type":"web_search_20250305","name":"web_search","max_uses":3},{"type":"custom","name":"noschema"}]}`,
			`{"model":"m",` + chatHi + `,"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},` +
				`{"type":"function","function":{"name":"noschema","parameters":{"type":"object","properties":{}}}}]}`},
		{"tool_choice auto", Options{}, `{"model":"c",` + oneUser + `,"tools":[{"name":"f"}],"tool_choice":{"type":"auto"}}`,
			`{"model":"m",` + chatHi + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}],"tool_choice":"auto"}`},
		{"tool_choice any is required; disable_parallel_tool_use is parallel_tool_calls false", Options{},
			`{"model":"c",` + oneUser + `,"tools":[{"name":"f"}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`,
			`{"model":"m",` + chatHi + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}],"tool_choice":"required","parallel_tool_calls":false}`},
		{"tool_choice tool is a function choice", Options{},
			`{"model":"c",` + oneUser + `,"tools":[{"name":"f"}],"tool_choice":{"type":"tool","name":"f"}}`,
			`{"model":"m",` + chatHi + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`},
		{"tool_choice none", Options{},
			`{"model":"c",` + oneUser + `,"tools":[{"name":"f"}],"tool_choice":{"type":"none"}}`,
			`{"model":"m",` + chatHi + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}],"tool_choice":"none"}`},
		{"a tool choice without tools left (server tools only) is left out", Options{},
			`{"model":"c",` + oneUser + `,"tools":[{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"any"}}`,
			`{"model":"m",` + chatHi + `}`},
		{"max_tokens is max_completion_tokens on openai and azure", openai,
			`{"model":"c","max_tokens":1024,` + oneUser + `}`, `{"model":"m",` + chatHi + `,"max_completion_tokens":1024}`},
		{"max_tokens stays max_tokens elsewhere", Options{},
			`{"model":"c","max_tokens":1024,` + oneUser + `}`, `{"model":"m",` + chatHi + `,"max_tokens":1024}`},
		{"stop_sequences become stop; temperature and top_p kept; top_k dropped", Options{},
			`{"model":"c",` + oneUser + `,"stop_sequences":["\n\nHuman:","END"],"temperature":0.7,"top_p":0.9,"top_k":40}`,
			`{"model":"m",` + chatHi + `,"stop":["\n\nHuman:","END"],"temperature":0.7,"top_p":0.9}`},
		{"metadata.user_id becomes user", Options{},
			`{"model":"c",` + oneUser + `,"metadata":{"user_id":"user_abc_session_1"}}`, `{"model":"m",` + chatHi + `,"user":"user_abc_session_1"}`},
		{"a stream asks for the usage in its last chunk", Options{Stream: true},
			`{"model":"c","stream":true,` + oneUser + `}`, `{"model":"m",` + chatHi + `,"stream":true,"stream_options":{"include_usage":true}}`},
		{"the client's stream field is not the translation's: Options.Stream decides", Options{},
			`{"model":"c","stream":true,` + oneUser + `}`, `{"model":"m",` + chatHi + `}`},
		{"thinking blocks, signatures and redacted thinking are dropped, as is the thinking parameter", Options{},
			`{"model":"c","thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` +
				`{"type":"thinking","thinking":"hmm","signature":"EqQBCgIYAhIM"},{"type":"redacted_thinking","data":"EmwKAhgB"},{"type":"text","text":"hello"}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`},
		{"fields without a counterpart are dropped", Options{},
			`{"model":"c",` + oneUser + `,"service_tier":"auto","container":"c1","mcp_servers":[],"context_management":{},"anthropic_version":"x"}`,
			`{"model":"m",` + chatHi + `}`},
		{"documents: plain text as text, content as parts, a PDF as a file part where the member takes files", openai,
			`{"model":"c","messages":[{"role":"user","content":[` +
				`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"The grass is green."},"title":"t","citations":{"enabled":true}},` +
				`{"type":"document","source":{"type":"content","content":[{"type":"text","text":"part"}]}},` +
				`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"},"title":"report.pdf"},` +
				`{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"The grass is green."},{"type":"text","text":"part"},` +
				`{"type":"file","file":{"filename":"report.pdf","file_data":"data:application/pdf;base64,JVBERi0x"}}]}]}`},
		{"a PDF on a member without file input is dropped", Options{},
			`{"model":"c","messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"}},{"type":"text","text":"summarize"}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"summarize"}]}]}`},
		{"unknown block types are dropped; a turn left empty is not written", Options{},
			`{"model":"c","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{}},` +
				`{"type":"web_search_tool_result","tool_use_id":"s","content":[]}]},{"role":"user","content":[{"type":"search_result","source":"x"},{"type":"text","text":"go on"}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":"go on"}]}`},
		{"strings pass as the client wrote them, escapes and all", Options{},
			`{"model":"c","system":"tab\there \u00e9 \ud83d\ude00","messages":[{"role":"user","content":"quote \" slash \/ nl \n <b>"}]}`,
			`{"model":"m","messages":[{"role":"system","content":"tab\there é 😀"},{"role":"user","content":"quote \" slash / nl \n <b>"}]}`},
	} {
		o := tc.o
		o.Model = []byte("m")
		got, _, err := MessagesToChat(nil, []byte(tc.in), o)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		sameJSON(t, tc.name, got, tc.want)
	}
}

// TestMessagesToChatDropped: the tool types left out are named, in order,
// for X-Gateway-Dropped-Tools.
func TestMessagesToChatDropped(t *testing.T) {
	in := `{"model":"c",` + oneUser + `,"tools":[{"type":"web_search_20250305","name":"web_search"},{"name":"f"},{"type":"code_execution_20250522","name":"code_execution"}]}`
	_, dropped, err := MessagesToChat([]byte("prefix"), []byte(in), Options{Model: []byte("m")})
	if err != nil || !reflect.DeepEqual(dropped, []string{"web_search_20250305", "code_execution_20250522"}) {
		t.Fatalf("dropped %q, %v", dropped, err)
	}
	if _, dropped, _ = MessagesToChat(nil, []byte(`{"model":"c",`+oneUser+`,"tools":[{"name":"f"}]}`), Options{}); dropped != nil {
		t.Errorf("nothing dropped: %q", dropped)
	}
	// Each once; a type that is not a plain name is "unknown".
	in = `{"model":"c",` + oneUser + `,"tools":[{"type":"web_search_20250305","name":"a"},{"type":"web_search_20250305","name":"b"},` +
		`{"type":"X-Evil\r\nSet-Cookie: a","name":"c"},{"type":"` + strings.Repeat("a", 65) + `","name":"d"}]}`
	if _, dropped, _ = MessagesToChat(nil, []byte(in), Options{}); !reflect.DeepEqual(dropped, []string{"web_search_20250305", "unknown"}) {
		t.Errorf("dropped %q", dropped)
	}
}

// TestMessagesToChatAppends: the request is appended to dst.
func TestMessagesToChatAppends(t *testing.T) {
	got, _, err := MessagesToChat([]byte("xx"), []byte(`{"model":"c",`+oneUser+`}`), Options{Model: []byte("m")})
	if err != nil || !strings.HasPrefix(string(got), `xx{"model":"m"`) {
		t.Fatalf("%s %v", got, err)
	}
}

// TestMessagesToChatRefuses: a body the Messages API would refuse is a 400
// naming where the fault is; never a panic, never a partial request sent.
func TestMessagesToChatRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`not json`, "the body is not valid JSON"},
		{`[1]`, "the body is not a JSON object"},
		{`{"model":"c"}`, "messages: an array of messages is required"},
		{`{"model":"c","messages":"hi"}`, "messages: an array of messages is required"},
		{`{"model":"c","messages":[1]}`, "messages.0: a message must be an object"},
		{`{"model":"c","messages":[{"role":"tool","content":"x"}]}`, `messages.0.role: must be "user", "assistant" or "system"`},
		{`{"model":"c","messages":[{"role":"user","content":"x"},{"role":"system","content":7}]}`, "messages.1.content: must be a string or an array of text blocks"},
		{`{"model":"c","messages":[{"role":"system","content":[{"type":"text","text":1}]}]}`, "messages.0.content.0: a text block needs a string text"},
		{`{"model":"c","messages":[{"role":"user"}]}`, "messages.0: a message needs content"},
		{`{"model":"c","messages":[{"role":"user","content":7}]}`, "messages.0.content: must be a string or an array of content blocks"},
		{`{"model":"c","messages":[{"role":"user","content":["hi"]}]}`, "messages.0.content.0: a content block must be an object"},
		{`{"model":"c","messages":[{"role":"user","content":[{"text":"hi"}]}]}`, "messages.0.content.0: a content block needs a string type"},
		{`{"model":"c","messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "messages.0.content.0: a text block needs a string text"},
		{`{"model":"c","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text"}]}]}`, "messages.0.content.1: a text block needs a string text"},
		{`{"model":"c","messages":[{"role":"user","content":[{"type":"image"}]}]}`, "messages.0.content.0: an image block needs a source object"},
		{`{"model":"c","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"x"}}]}]}`, "messages.0.content.0.source: a base64 source needs string media_type and data"},
		{`{"model":"c","messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`, "messages.0.content.0: a tool_result block needs a string tool_use_id"},
		{`{"model":"c","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":5}]}]}`, "messages.0.content.0.content: must be a string or an array of content blocks"},
		{`{"model":"c","messages":[{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]}`, "messages.0.content.0: a tool_use block needs a string id"},
		{`{"model":"c","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{}}]}]}`, "messages.0.content.0: a tool_use block needs a string name"},
		{`{"model":"c","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":[1]}]}]}`, "messages.0.content.0.input: must be an object"},
		{`{"model":"c","system":5,` + oneUser + `}`, "system: must be a string or an array of text blocks"},
		{`{"model":"c","max_tokens":"10",` + oneUser + `}`, "max_tokens: must be a number"},
		{`{"model":"c","temperature":"hot",` + oneUser + `}`, "temperature: must be a number"},
		{`{"model":"c","stop_sequences":[1],` + oneUser + `}`, "stop_sequences.0: must be a string"},
		{`{"model":"c","metadata":{"user_id":5},` + oneUser + `}`, "metadata.user_id: must be a string"},
		{`{"model":"c","tools":{},` + oneUser + `}`, "tools: must be an array"},
		{`{"model":"c","tools":[{"description":"d"}],` + oneUser + `}`, "tools.0: a tool needs a string name"},
		{`{"model":"c","tools":[{"name":"f","input_schema":"x"}],` + oneUser + `}`, "tools.0.input_schema: must be an object"},
		{`{"model":"c","tools":[{"name":"f"}],"tool_choice":{"type":"tool"},` + oneUser + `}`, `tool_choice: a "tool" choice needs a string name`},
		{`{"model":"c","tool_choice":"auto",` + oneUser + `}`, "tool_choice: must be an object"},
		// The Messages API keeps the last of two copies, fastjson the first:
		// neither is guessed.
		{`{"model":"c","messages":[],` + oneUser + `}`, "messages: the member is given more than once"},
		{`{"model":"c","max_tokens":1,"max_tokens":2,` + oneUser + `}`, "max_tokens: the member is given more than once"},
	} {
		_, _, err := MessagesToChat(nil, []byte(tc.in), Options{Model: []byte("m")})
		var te *Error
		if !errors.As(err, &te) || te.Status != 400 || te.Code != "invalid_request" || te.Message != tc.want {
			t.Errorf("%s:\n got  %v\n want 400 %q", tc.in, err, tc.want)
		}
	}
}

// TestRawStringsStayJSON: every string copied as the client or upstream
// wrote it stays that JSON string, whatever escapes it holds (a string
// read before its copy would be re-quoted by strconv's rules, which write
// \x01 and \U0001f600: not JSON).
func TestRawStringsStayJSON(t *testing.T) {
	const s = `a\u0001\"b\\c\u2028\ud83d\ude00\/d`
	want := "a\x01\"b\\c\u2028😀/d"
	in := `{"model":"c","system":"` + s + `","metadata":{"user_id":"` + s + `"},"stop_sequences":["` + s + `"],` +
		`"tools":[{"name":"` + s + `","description":"` + s + `"}],"tool_choice":{"type":"tool","name":"` + s + `"},"messages":[` +
		`{"role":"user","content":"` + s + `"},` +
		`{"role":"assistant","content":[{"type":"text","text":"` + s + `"},{"type":"tool_use","id":"` + s + `","name":"` + s + `","input":{"k":"` + s + `"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + s + `","content":"` + s + `"},{"type":"text","text":"` + s + `"},{"type":"text","text":"` + s + `"}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"` + s + `"}]}]}]}`
	out, _, err := MessagesToChat(nil, []byte(in), Options{Model: []byte("m")})
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		User     string   `json:"user"`
		Stop     []string `json:"stop"`
		Messages []struct {
			Content   any `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
		Tools []struct {
			Function struct{ Name, Description string }
		} `json:"tools"`
		ToolChoice struct{ Function struct{ Name string } } `json:"tool_choice"`
	}
	if err := json.Unmarshal(out, &req); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	m := req.Messages
	got := []any{req.User, req.Stop[0], req.Tools[0].Function.Name, req.Tools[0].Function.Description, req.ToolChoice.Function.Name,
		m[0].Content, m[1].Content, m[2].Content, m[2].ToolCalls[0].ID, m[2].ToolCalls[0].Function.Name,
		m[3].ToolCallID, m[3].Content, m[5].Content}
	for i, g := range got {
		if g != want {
			t.Errorf("string %d: %q, want %q", i, g, want)
		}
	}
	if m[4].Content.([]any)[0].(map[string]any)["text"] != want || m[2].ToolCalls[0].Function.Arguments != `{"k":"`+s+`"}` {
		t.Errorf("parts %v, arguments %s", m[4].Content, m[2].ToolCalls[0].Function.Arguments)
	}
	// The answer's text and refusal, the same.
	ans := `{"id":"` + s + `","choices":[{"message":{"content":"` + s + `","refusal":"` + s + `","tool_calls":[{"id":"` + s + `","function":{"name":"` + s + `","arguments":"{}"}}]}}]}`
	out, err = ChatToMessages(nil, []byte(ans), []byte("m"))
	var msg struct {
		ID      string `json:"id"`
		Content []struct{ Text, ID, Name string }
	}
	if err != nil || json.Unmarshal(out, &msg) != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if msg.ID != "msg_"+want || msg.Content[0].Text != want || msg.Content[1].Text != want || msg.Content[2].ID != want || msg.Content[2].Name != want {
		t.Errorf("%+v", msg)
	}
}
