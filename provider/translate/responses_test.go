package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

var updateRespGolden = flag.Bool("update-responses", false, "rewrite the golden chat requests under testdata/responses")

// respJSONEqual fails t unless got and want are the same JSON value.
func respJSONEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", respCompact(got), respCompact([]byte(want)))
	}
}

func respCompact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

var respClaude = Options{Model: []byte("claude-sonnet-4-5")}

// The request mapping, case by case (docs/providers.md, Responses API on
// every provider). want is the whole chat request.
var respRequestCases = []struct {
	name    string
	opt     Options
	in      string
	want    string
	dropped []string
}{
	{
		name: "instructions become the system message, a string input the user message, model from Options",
		in:   `{"model":"gpt-5","instructions":"Be brief.","input":"Hi"}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`,
	},
	{
		name: "developer becomes system, system stays, text parts join with new lines",
		in: `{"model":"m","input":[
			{"type":"message","role":"developer","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},
			{"role":"system","content":"c"},
			{"role":"user","content":"q"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"system","content":"a\nb"},{"role":"system","content":"c"},{"role":"user","content":"q"}]}`,
	},
	{
		name: "user parts: text and images by URL kept (detail too), images by file_id and files dropped",
		in: `{"model":"m","input":[{"role":"user","content":[
			{"type":"input_text","text":"what is this?"},
			{"type":"input_image","image_url":"https://x.test/a.png","detail":"high"},
			{"type":"input_image","image_url":"data:image/png;base64,AAAA"},
			{"type":"input_image","file_id":"file-1"},
			{"type":"input_file","file_id":"file-2"}]}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[
			{"type":"text","text":"what is this?"},
			{"type":"image_url","image_url":{"url":"https://x.test/a.png","detail":"high"}},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`,
	},
	{
		name: "a user message left with nothing is left out",
		in:   `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]},{"role":"user","content":"q"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}]}`,
	},
	{
		name: "an assistant message without text is left out; the calls after it open their own",
		in: `{"model":"m","input":[{"role":"user","content":"q"},{"role":"assistant","content":""},
			{"role":"assistant","content":[]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
	},
	{
		name: "an empty assistant string leaves the open assistant message open: the call after it joins it",
		in: `{"model":"m","input":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"assistant","content":""},
			{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"},
			{"role":"assistant","content":"a","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
	},
	{
		name: "a message left out after an open assistant message leaves that one closed",
		in: `{"model":"m","input":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},
			{"role":"assistant","content":[{"type":"output_text","text":"b"}]},
			{"role":"assistant","content":[{"type":"mystery"}]},{"role":"user","content":[]},{"role":"system","content":[]},
			{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","file_id":"f"}]},{"role":"assistant","content":"c"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"assistant","content":"b"},
			{"role":"tool","tool_call_id":"c","content":""},{"role":"assistant","content":"c"}]}`,
	},
	{
		name: "assistant output_text parts join, a refusal part is kept as text",
		in: `{"model":"m","input":[{"role":"user","content":"q"},
			{"type":"message","role":"assistant","status":"completed","id":"msg_1","phase":"final_answer","content":[
				{"type":"output_text","text":"Hel","annotations":[]},{"type":"output_text","text":"lo. "},{"type":"refusal","refusal":"No."}]}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"Hello. No."}]}`,
	},
	{
		name: "function calls join the assistant text before them; call_id is the tool call id; outputs become tool messages",
		in: `{"model":"m","input":[{"role":"user","content":"q"},
			{"role":"assistant","content":"Looking."},
			{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"opaque"},
			{"type":"function_call","id":"fc_1","call_id":"call_1","name":"shell","arguments":"{\"cmd\":\"ls\"}","status":"completed"},
			{"type":"function_call","call_id":"call_2","name":"read","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_1","output":"a.go"},
			{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"x"},{"type":"input_text","text":"y"}]}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"},
			{"role":"assistant","content":"Looking.","tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}},
				{"id":"call_2","type":"function","function":{"name":"read","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"a.go"},
			{"role":"tool","tool_call_id":"call_2","content":"x\ny"}]}`,
	},
	{
		name: "calls without text open their own assistant message; missing arguments are {}",
		in: `{"model":"m","input":[{"role":"user","content":"q"},
			{"type":"function_call","call_id":"c","name":"now"},
			{"type":"function_call_output","call_id":"c","output":"noon"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"now","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c","content":"noon"}]}`,
	},
	{
		name: "images in tool outputs follow the run of tool messages as one user message",
		in: `{"model":"m","input":[{"role":"user","content":"q"},
			{"type":"function_call","call_id":"c1","name":"view_image","arguments":"{}"},
			{"type":"function_call","call_id":"c2","name":"view_image","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":[{"type":"input_image","image_url":"data:image/png;base64,AA"}]},
			{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"b.png"},{"type":"input_image","image_url":"https://x.test/b.png","detail":"low"}]},
			{"role":"user","content":"and?"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"},
			{"role":"assistant","content":null,"tool_calls":[
				{"id":"c1","type":"function","function":{"name":"view_image","arguments":"{}"}},
				{"id":"c2","type":"function","function":{"name":"view_image","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","content":""},
			{"role":"tool","tool_call_id":"c2","content":"b.png"},
			{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}},{"type":"image_url","image_url":{"url":"https://x.test/b.png","detail":"low"}}]},
			{"role":"user","content":"and?"}]}`,
	},
	{
		name: "custom tool calls (Codex's apply_patch) carry their input as {\"input\":…}; their outputs are tool messages",
		in: `{"model":"m","input":[{"role":"user","content":"q"},
			{"type":"custom_tool_call","call_id":"c","name":"apply_patch","input":"*** Begin Patch\n*** End Patch"},
			{"type":"custom_tool_call_output","call_id":"c","output":"Done"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"apply_patch--freeform","arguments":"{\"input\":\"*** Begin Patch\\n*** End Patch\"}"}}]},
			{"role":"tool","tool_call_id":"c","content":"Done"}]}`,
	},
	{
		name: "a namespaced function call names its chat function namespace--name",
		in: `{"model":"m","input":[{"role":"user","content":"q"},
			{"type":"function_call","call_id":"c","name":"create_issue","namespace":"mcp__github","arguments":"{}"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"mcp__github--create_issue","arguments":"{}"}}]}]}`,
	},
	{
		name: "reasoning, hosted tool calls and unknown items are dropped",
		in: `{"model":"m","input":[{"role":"user","content":"q"},
			{"type":"reasoning","summary":[{"type":"summary_text","text":"thinking"}]},
			{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go"}},
			{"type":"local_shell_call","call_id":"l","status":"completed","action":{"type":"exec","command":["ls"]}},
			{"type":"compaction","encrypted_content":"x"},
			{"type":"brand_new_item","x":1},
			{"role":"assistant","content":"done"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"done"}]}`,
	},
	{
		name: "function tools keep name, description, parameters and strict; other fields are dropped",
		in: `{"model":"m","input":"q","tools":[
			{"type":"function","name":"get_weather","description":"Weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true,"defer_loading":false,"output_schema":{}},
			{"type":"function","name":"now","parameters":null,"strict":null}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[
			{"type":"function","function":{"name":"get_weather","description":"Weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true}},
			{"type":"function","function":{"name":"now"}}]}`,
	},
	{
		name: "a custom tool is a function of one string, input; its grammar joins the description",
		in: `{"model":"m","input":"q","tools":[
			{"type":"custom","name":"apply_patch","description":"Edit files.","format":{"type":"grammar","syntax":"lark","definition":"start: \"x\""}},
			{"type":"custom","name":"note","format":{"type":"text"}}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[
			{"type":"function","function":{"name":"apply_patch--freeform","description":"Edit files.\n\nThe input is freeform text, not JSON, and must match this lark grammar:\nstart: \"x\"","parameters":` + respCustomInputSchema + `}},
			{"type":"function","function":{"name":"note--freeform","parameters":` + respCustomInputSchema + `}}]}`,
	},
	{
		name: "the function and custom tools of a namespace become functions named namespace--name; other types in it are dropped",
		in: `{"model":"m","input":"q","tools":[{"type":"namespace","name":"crm","description":"CRM tools.","tools":[
			{"type":"function","name":"list_open_orders","defer_loading":true,"parameters":{"type":"object"}},
			{"type":"custom","name":"query"},
			{"type":"mcp","server_label":"x"}]}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[
			{"type":"function","function":{"name":"crm--list_open_orders","parameters":{"type":"object"}}},
			{"type":"function","function":{"name":"crm--query--freeform","parameters":` + respCustomInputSchema + `}}]}`,
		dropped: []string{"mcp"},
	},
	{
		name: "hosted tools and unknown tool types are dropped and named once; with no tool left, tool_choice and parallel_tool_calls go too",
		in: `{"model":"m","input":"q","tool_choice":"required","parallel_tool_calls":false,"tools":[
			{"type":"web_search"},{"type":"web_search_preview"},{"type":"file_search","vector_store_ids":["vs_1"]},
			{"type":"code_interpreter","container":{"type":"auto"}},{"type":"computer_use_preview","display_width":1,"display_height":1,"environment":"linux"},
			{"type":"image_generation"},{"type":"mcp","server_label":"deepwiki","server_url":"https://x.test"},{"type":"local_shell"},
			{"type":"shell"},{"type":"apply_patch"},{"type":"tool_search"},{"type":"web_search"},{"type":"quantum_oracle"},{"type":"Bad\r\nX-Evil: 1"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}]}`,
		dropped: []string{"web_search", "web_search_preview", "file_search", "code_interpreter", "computer_use_preview",
			"image_generation", "mcp", "local_shell", "shell", "apply_patch", "tool_search", "quantum_oracle", "unknown"},
	},
	{
		name: "tools from additional_tools items join the tools; a tool declared twice is sent once",
		in: `{"model":"m","tools":[{"type":"function","name":"a"}],"input":[
			{"type":"additional_tools","role":"developer","tools":[{"type":"function","name":"a"},{"type":"custom","name":"exec"},{"type":"web_search"}]},
			{"role":"user","content":"q"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[
			{"type":"function","function":{"name":"a"}},
			{"type":"function","function":{"name":"exec--freeform","parameters":` + respCustomInputSchema + `}}]}`,
		dropped: []string{"web_search"},
	},
	{
		name: "a tool_search the client executes (Codex's, over its MCP tools) is a function; its call and output are a tool call and a tool message, the tools it loaded join the tools",
		in: `{"model":"gpt-5.5","tools":[{"type":"function","name":"exec_command"},
			{"type":"tool_search","execution":"client","description":"Find tools.","parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}},
			{"type":"web_search"}],"input":[
			{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]},
			{"type":"tool_search_call","id":"tsc_1","call_id":"call_1","status":"completed","execution":"client","arguments":{"limit":8,"query":"echo say"}},
			{"type":"tool_search_output","id":"tso_1","call_id":"call_1","status":"completed","execution":"client","tools":[
				{"type":"namespace","name":"mcp__echo","description":"Tools in the mcp__echo namespace.","tools":[
					{"type":"function","name":"say","description":"Echo.","strict":false,"defer_loading":true,"parameters":{"type":"object","properties":{"text":{"type":"string"}}}}]},
				{"type":"custom","name":"run"}]},
			{"type":"function_call","call_id":"call_2","name":"say","namespace":"mcp__echo","arguments":"{\"text\":\"ping\"}"},
			{"type":"function_call_output","call_id":"call_2","output":"echo says: ping"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"text","text":"q"}]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"tool_search--client","arguments":"{\"limit\":8,\"query\":\"echo say\"}"}}]},
			{"role":"tool","content":"Tools loaded: mcp__echo--say, run--freeform.","tool_call_id":"call_1"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"mcp__echo--say","arguments":"{\"text\":\"ping\"}"}}]},
			{"role":"tool","content":"echo says: ping","tool_call_id":"call_2"}],"tools":[
			{"type":"function","function":{"name":"exec_command"}},
			{"type":"function","function":{"name":"tool_search--client","description":"Find tools.","parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}},
			{"type":"function","function":{"name":"mcp__echo--say","description":"Echo.","parameters":{"type":"object","properties":{"text":{"type":"string"}}},"strict":false}},
			{"type":"function","function":{"name":"run--freeform","parameters":` + respCustomInputSchema + `}}]}`,
		dropped: []string{"web_search"},
	},
	{
		name: "OpenAI's own tool search and its items are dropped, as a hosted tool",
		in: `{"model":"m","tools":[{"type":"tool_search"},{"type":"function","name":"a","defer_loading":true}],"input":[
			{"role":"user","content":"q"},
			{"type":"tool_search_call","call_id":"c1","execution":"server","arguments":{"query":"x"}},
			{"type":"tool_search_output","call_id":"c1","execution":"server","tools":[{"type":"function","name":"b"}]}]}`,
		want:    `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"a"}}]}`,
		dropped: []string{"tool_search"},
	},
	{
		name: "tool_choice strings and parallel_tool_calls pass",
		in:   `{"model":"m","input":"q","tools":[{"type":"function","name":"a"}],"tool_choice":"required","parallel_tool_calls":false}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":"required","parallel_tool_calls":false}`,
	},
	{
		name: "tool_choice naming a function",
		in:   `{"model":"m","input":"q","tools":[{"type":"function","name":"a"}],"tool_choice":{"type":"function","name":"a"}}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"a"}}}`,
	},
	{
		name: "tool_choice naming a custom tool",
		in:   `{"model":"m","input":"q","tools":[{"type":"custom","name":"apply_patch"}],"tool_choice":{"type":"custom","name":"apply_patch"}}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"apply_patch--freeform","parameters":` + respCustomInputSchema + `}}],"tool_choice":{"type":"function","function":{"name":"apply_patch--freeform"}}}`,
	},
	{
		name: "tool_choice naming a function that lives in a namespace",
		in:   `{"model":"m","input":"q","tools":[{"type":"namespace","name":"crm","tools":[{"type":"function","name":"find"}]}],"tool_choice":{"type":"function","name":"find"}}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"crm--find"}}],"tool_choice":{"type":"function","function":{"name":"crm--find"}}}`,
	},
	{
		name: "allowed_tools requiring the one tool it allows forces that tool",
		in: `{"model":"m","input":"q","tools":[{"type":"function","name":"a"},{"type":"function","name":"b"},{"type":"web_search"}],
			"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"b"},{"type":"web_search"}]}}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}],
			"tool_choice":{"type":"function","function":{"name":"b"}}}`,
		dropped: []string{"web_search"},
	},
	{
		name: "allowed_tools of several tools keeps its mode",
		in: `{"model":"m","input":"q","tools":[{"type":"function","name":"a"},{"type":"function","name":"b"}],
			"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"a"},{"type":"function","name":"b"}]}}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}],"tool_choice":"auto"}`,
	},
	{
		name:    "tool_choice forcing a hosted tool, which was dropped, is left out",
		in:      `{"model":"m","input":"q","tools":[{"type":"function","name":"a"},{"type":"file_search","vector_store_ids":[]}],"tool_choice":{"type":"file_search"}}`,
		want:    `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"a"}}]}`,
		dropped: []string{"file_search"},
	},
	{
		name: "max_output_tokens is max_tokens for most members",
		in:   `{"model":"m","input":"q","max_output_tokens":512}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"max_tokens":512}`,
	},
	{
		name: "max_output_tokens is max_completion_tokens where Options say so",
		opt:  Options{Model: []byte("claude-sonnet-4-5"), MaxCompletionTokens: true},
		in:   `{"model":"m","input":"q","max_output_tokens":512}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"max_completion_tokens":512}`,
	},
	{
		name: "temperature, top_p and user are kept",
		in:   `{"model":"m","input":"q","temperature":0.2,"top_p":0.9,"user":"u-1","safety_identifier":"s-1"}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"temperature":0.2,"top_p":0.9,"user":"u-1"}`,
	},
	{
		name: "safety_identifier is the user when user is absent",
		in:   `{"model":"m","input":"q","safety_identifier":"s-1"}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"user":"s-1"}`,
	},
	{
		name: "reasoning.effort is reasoning_effort, xhigh asks for high; summary is dropped",
		in:   `{"model":"m","input":"q","reasoning":{"effort":"xhigh","summary":"auto"}}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"reasoning_effort":"high"}`,
	},
	{
		name: "null reasoning and text without a format add nothing",
		in:   `{"model":"m","input":"q","reasoning":null,"text":{"verbosity":"low"}}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}]}`,
	},
	{
		name: "text.format json_schema is response_format json_schema",
		in:   `{"model":"m","input":"q","text":{"format":{"type":"json_schema","name":"answer","description":"The answer.","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}}}}}}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"response_format":{"type":"json_schema","json_schema":{"name":"answer","description":"The answer.","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}}}}}}`,
	},
	{
		name: "text.format json_object is response_format json_object, text is nothing",
		in:   `{"model":"m","input":"q","text":{"format":{"type":"json_object"}}}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"response_format":{"type":"json_object"}}`,
	},
	{
		name: "a stream asks for the usage in its last chunk",
		opt:  Options{Model: []byte("claude-sonnet-4-5"), Stream: true},
		in:   `{"model":"m","input":"q","stream":true}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}],"stream":true,"stream_options":{"include_usage":true}}`,
	},
	{
		name: "fields with no chat counterpart are dropped without error",
		in: `{"model":"m","input":"q","store":true,"include":["reasoning.encrypted_content"],"truncation":"auto","prompt_cache_key":"k",
			"prompt_cache_retention":"24h","service_tier":"flex","metadata":{"a":"b"},"top_logprobs":3,"max_tool_calls":4,
			"client_metadata":{"x":"y"},"stream_options":{"include_obfuscation":false},"background":false,"previous_response_id":null,
			"context_management":[{"type":"compaction"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q"}]}`,
	},
	{
		name: "strings keep their value, escapes and all",
		in:   `{"model":"m","input":[{"role":"user","content":"\u2028<b>\"q\"\u0000"},{"type":"function_call","call_id":"c\"1","name":"f","arguments":"{\"a\":\"</script>\"}"}]}`,
		want: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"\u2028<b>\"q\"\u0000"},{"role":"assistant","content":null,"tool_calls":[{"id":"c\"1","type":"function","function":{"name":"f","arguments":"{\"a\":\"</script>\"}"}}]}]}`,
	},
}

func TestResponsesToChat(t *testing.T) {
	for _, tc := range respRequestCases {
		t.Run(tc.name, func(t *testing.T) {
			opt := tc.opt
			if opt.Model == nil {
				opt = respClaude
			}
			prefix := []byte("prefix:")
			out, dropped, err := ResponsesToChat(prefix, []byte(tc.in), opt)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !bytes.HasPrefix(out, prefix) {
				t.Fatalf("dst was not appended to: %q", out)
			}
			respJSONEqual(t, out[len(prefix):], tc.want)
			if !reflect.DeepEqual(dropped, tc.dropped) {
				t.Fatalf("dropped %q, want %q", dropped, tc.dropped)
			}
		})
	}
}

// Requests a translation refuses, with the code and a phrase of the message.
var respRefusedCases = []struct {
	name, in, code, says string
}{
	{"previous_response_id names stored state", `{"model":"m","input":"q","previous_response_id":"resp_1"}`, respCodePreviousResponse, "previous_response_id"},
	{"a conversation is stored state", `{"model":"m","input":"q","conversation":"conv_1"}`, respCodeUnsupported, "conversation"},
	{"a stored prompt", `{"model":"m","input":"q","prompt":{"id":"pmpt_1"}}`, respCodeUnsupported, "prompt"},
	{"background runs", `{"model":"m","input":"q","background":true}`, respCodeUnsupported, "background"},
	{"an item reference names a stored item", `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, respCodeUnsupported, "input[0]: item_reference"},
	{"not JSON", `{"model":`, respCodeInvalid, "JSON object"},
	{"not an object", `[1]`, respCodeInvalid, "JSON object"},
	{"no input", `{"model":"m"}`, respCodeInvalid, "input must be"},
	{"input a number", `{"model":"m","input":3}`, respCodeInvalid, "input must be"},
	{"input empty", `{"model":"m","input":[]}`, respCodeInvalid, "no message"},
	{"only reasoning", `{"model":"m","input":[{"type":"reasoning","summary":[]}]}`, respCodeInvalid, "no message"},
	{"instructions a number", `{"model":"m","instructions":1,"input":"q"}`, respCodeInvalid, "instructions must be a string"},
	{"an item not an object", `{"model":"m","input":["q"]}`, respCodeInvalid, "input[0] must be an object"},
	{"an item without a type or role", `{"model":"m","input":[{"content":"q"}]}`, respCodeInvalid, "input[0] needs a type"},
	{"a type not a string", `{"model":"m","input":[{"type":7}]}`, respCodeInvalid, "input[0].type must be a string"},
	{"a role the API does not have", `{"model":"m","input":[{"role":"tool","content":"q"}]}`, respCodeInvalid, "input[0].role"},
	{"content a number", `{"model":"m","input":[{"role":"user","content":5}]}`, respCodeInvalid, "input[0].content"},
	{"a part not an object", `{"model":"m","input":[{"role":"user","content":["x"]}]}`, respCodeInvalid, "input[0].content[0] must be an object"},
	{"text not a string", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":1}]}]}`, respCodeInvalid, "input[0].content[0].text"},
	{"a refusal not a string", `{"model":"m","input":[{"role":"assistant","content":[{"type":"refusal","refusal":{}}]}]}`, respCodeInvalid, "input[0].content[0].refusal"},
	{"an image_url not a string", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":{"url":"x"}}]}]}`, respCodeInvalid, "image_url must be a string"},
	{"a call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, respCodeInvalid, "input[0].call_id"},
	{"a call without name", `{"model":"m","input":[{"type":"function_call","call_id":"c","arguments":"{}"}]}`, respCodeInvalid, "input[0].name"},
	{"arguments an object", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]}`, respCodeInvalid, "input[0].arguments"},
	{"a namespace a number", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","namespace":1}]}`, respCodeInvalid, "input[0].namespace"},
	{"custom input missing", `{"model":"m","input":[{"type":"custom_tool_call","call_id":"c","name":"f"}]}`, respCodeInvalid, "input[0].input"},
	{"an output without call_id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, respCodeInvalid, "input[0].call_id"},
	{"an output a number", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":1}]}`, respCodeInvalid, "input[0].output"},
	{"an output image_url a number", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":7}]}]}`, respCodeInvalid, "input[0].output[0].image_url"},
	{"an output part text a number", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":1}]}]}`, respCodeInvalid, "input[0].output[0].text"},
	{"tools an object", `{"model":"m","input":"q","tools":{}}`, respCodeInvalid, "tools must be an array"},
	{"a tool a string", `{"model":"m","input":"q","tools":["f"]}`, respCodeInvalid, "tools[0] must be an object"},
	{"a tool type missing", `{"model":"m","input":"q","tools":[{"name":"f"}]}`, respCodeInvalid, "tools[0].type"},
	{"a function without name", `{"model":"m","input":"q","tools":[{"type":"function"}]}`, respCodeInvalid, "tools[0].name"},
	{"parameters a string", `{"model":"m","input":"q","tools":[{"type":"function","name":"f","parameters":"{}"}]}`, respCodeInvalid, "tools[0].parameters"},
	{"strict a string", `{"model":"m","input":"q","tools":[{"type":"function","name":"f","strict":"yes"}]}`, respCodeInvalid, "tools[0].strict"},
	{"a description a number", `{"model":"m","input":"q","tools":[{"type":"function","name":"f","description":2}]}`, respCodeInvalid, "tools[0].description"},
	{"a custom format a string", `{"model":"m","input":"q","tools":[{"type":"custom","name":"f","format":"lark"}]}`, respCodeInvalid, "tools[0].format"},
	{"a custom format of unknown type", `{"model":"m","input":"q","tools":[{"type":"custom","name":"f","format":{"type":"regexp"}}]}`, respCodeInvalid, "tools[0].format.type"},
	{"a namespace without name", `{"model":"m","input":"q","tools":[{"type":"namespace","tools":[]}]}`, respCodeInvalid, "tools[0].name"},
	{"a namespace without tools", `{"model":"m","input":"q","tools":[{"type":"namespace","name":"n"}]}`, respCodeInvalid, "tools[0].tools"},
	{"a namespace tool without name", `{"model":"m","input":"q","tools":[{"type":"namespace","name":"n","tools":[{"type":"function"}]}]}`, respCodeInvalid, "tools[0].tools[0].name"},
	{"a function named with the namespace separator", `{"model":"m","input":"q","tools":[{"type":"function","name":"a--b"}]}`, respCodeInvalid, "reserved"},
	{"a namespace named with the separator", `{"model":"m","input":"q","tools":[{"type":"namespace","name":"a--b","tools":[{"type":"function","name":"c"}]}]}`, respCodeInvalid, "reserved"},
	{"a function named like a custom tool", `{"model":"m","input":"q","tools":[{"type":"function","name":"x--freeform"}]}`, respCodeInvalid, "reserved"},
	{"a namespaced function named like the client's tool search", `{"model":"m","input":"q","tools":[{"type":"namespace","name":"tool_search","tools":[{"type":"function","name":"client"}]}]}`, respCodeInvalid, "reserved"},
	{"a tool search call whose arguments are not an object", `{"model":"m","input":[{"role":"user","content":"q"},{"type":"tool_search_call","call_id":"c","execution":"client","arguments":7}]}`, respCodeInvalid, "input[1].arguments must be an object"},
	{"a tool search output without a call id", `{"model":"m","input":[{"role":"user","content":"q"},{"type":"tool_search_output","execution":"client","tools":[]}]}`, respCodeInvalid, "input[1].call_id must be a non-empty string"},
	{"a tool search output whose tools are not an array", `{"model":"m","input":[{"role":"user","content":"q"},{"type":"tool_search_output","call_id":"c","execution":"client","tools":{}}]}`, respCodeInvalid, "input[1].tools must be an array"},
	{"a namespaced function named freeform", `{"model":"m","input":"q","tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"freeform"}]}]}`, respCodeInvalid, "reserved"},
	{"additional_tools not an array", `{"model":"m","input":[{"role":"user","content":"q"},{"type":"additional_tools","tools":1}]}`, respCodeInvalid, "input[1].tools must be an array"},
	{"tool_choice an unknown string", `{"model":"m","input":"q","tools":[{"type":"function","name":"f"}],"tool_choice":"any"}`, respCodeInvalid, "tool_choice"},
	{"tool_choice a number", `{"model":"m","input":"q","tools":[{"type":"function","name":"f"}],"tool_choice":1}`, respCodeInvalid, "tool_choice"},
	{"tool_choice function without name", `{"model":"m","input":"q","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function"}}`, respCodeInvalid, "tool_choice.name"},
	{"allowed_tools of a bad mode", `{"model":"m","input":"q","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","mode":"none","tools":[]}}`, respCodeInvalid, "tool_choice.mode"},
	{"allowed_tools without tools", `{"model":"m","input":"q","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","mode":"auto"}}`, respCodeInvalid, "tool_choice.tools"},
	{"parallel_tool_calls a string", `{"model":"m","input":"q","tools":[{"type":"function","name":"f"}],"parallel_tool_calls":"yes"}`, respCodeInvalid, "parallel_tool_calls"},
	{"max_output_tokens zero", `{"model":"m","input":"q","max_output_tokens":0}`, respCodeInvalid, "max_output_tokens"},
	{"max_output_tokens a fraction", `{"model":"m","input":"q","max_output_tokens":1.5}`, respCodeInvalid, "max_output_tokens"},
	{"max_output_tokens a string", `{"model":"m","input":"q","max_output_tokens":"100"}`, respCodeInvalid, "max_output_tokens"},
	{"temperature a string", `{"model":"m","input":"q","temperature":"hot"}`, respCodeInvalid, "temperature"},
	{"temperature a number only fastjson reads", `{"model":"m","input":"q","temperature":.}`, respCodeInvalid, "temperature"},
	{"top_p NaN", `{"model":"m","input":"q","top_p":NaN}`, respCodeInvalid, "top_p"},
	{"max_output_tokens with a plus", `{"model":"m","input":"q","max_output_tokens":+5}`, respCodeInvalid, "max_output_tokens"},
	{"parameters holding a bad number", `{"model":"m","input":"q","tools":[{"type":"function","name":"f","parameters":{"type":"object","maximum":1..2}}]}`, respCodeInvalid, "tools[0].parameters"},
	{"a schema holding Inf", `{"model":"m","input":"q","text":{"format":{"type":"json_schema","name":"n","schema":{"max":[-Inf]}}}}`, respCodeInvalid, "text.format.schema"},
	{"top_p a bool", `{"model":"m","input":"q","top_p":true}`, respCodeInvalid, "top_p"},
	{"user a number", `{"model":"m","input":"q","user":1}`, respCodeInvalid, "user"},
	{"reasoning a string", `{"model":"m","input":"q","reasoning":"high"}`, respCodeInvalid, "reasoning"},
	{"reasoning.effort unknown", `{"model":"m","input":"q","reasoning":{"effort":"max"}}`, respCodeInvalid, "reasoning.effort"},
	{"text a string", `{"model":"m","input":"q","text":"json"}`, respCodeInvalid, "text must be"},
	{"text.format of unknown type", `{"model":"m","input":"q","text":{"format":{"type":"yaml"}}}`, respCodeInvalid, "text.format.type"},
	{"json_schema without name", `{"model":"m","input":"q","text":{"format":{"type":"json_schema","schema":{}}}}`, respCodeInvalid, "text.format.name"},
	{"json_schema without schema", `{"model":"m","input":"q","text":{"format":{"type":"json_schema","name":"n"}}}`, respCodeInvalid, "text.format.schema"},
	{"json_schema strict a string", `{"model":"m","input":"q","text":{"format":{"type":"json_schema","name":"n","schema":{},"strict":"y"}}}`, respCodeInvalid, "text.format.strict"},
}

func TestResponsesToChatRefuses(t *testing.T) {
	for _, tc := range respRefusedCases {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("keep")
			out, dropped, err := ResponsesToChat(dst, []byte(tc.in), respClaude)
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("error %v, want *Error", err)
			}
			if te.Status != 400 || te.Code != tc.code || !strings.Contains(te.Message, tc.says) {
				t.Fatalf("got %d %s %q, want 400 %s mentioning %q", te.Status, te.Code, te.Message, tc.code, tc.says)
			}
			if string(out) != "keep" || dropped != nil {
				t.Fatalf("a refusal returned %q, %q", out, dropped)
			}
		})
	}
}

// Codex's own requests (the first turn, and a turn that carries its tool
// history: reasoning, shell, view_image, apply_patch, an MCP tool in a
// namespace) translate to the golden chat requests beside them; -update-responses
// rewrites those after a reviewed change.
func TestResponsesToChatCodex(t *testing.T) {
	for _, name := range []string{"codex_first_turn", "codex_tool_turn"} {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "responses", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			out, dropped, err := ResponsesToChat(nil, in, Options{Model: []byte("claude-sonnet-4-5"), Stream: true})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(dropped, []string{"web_search"}) {
				t.Fatalf("dropped %q, want web_search alone", dropped)
			}
			golden := filepath.Join("testdata", "responses", name+".chat.json")
			if *updateRespGolden {
				var buf bytes.Buffer
				if err := json.Indent(&buf, out, "", "  "); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, append(buf.Bytes(), '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			respJSONEqual(t, out, string(want))
		})
	}
}

func TestRespJSONNumber(t *testing.T) {
	for _, n := range []string{"0", "-0", "1", "12", "-12.5", "1e3", "1E+3", "2.5e-10", "0.0"} {
		if !respJSONNumber([]byte(n)) {
			t.Errorf("%s refused", n)
		}
	}
	for _, n := range []string{"", "-", ".", "+1", "01", "1.", ".5", "1e", "1e+", "1..2", "NaN", "Inf", "-inf", "1-2", "0x1", "1.5.5"} {
		if respJSONNumber([]byte(n)) {
			t.Errorf("%s accepted", n)
		}
	}
}

// TestAppendRespObject: an object is copied as written, and refused when
// a number in it, at any depth, is not JSON's, whatever its strings hold.
func TestAppendRespObject(t *testing.T) {
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{`{"a":"1..2","b\"":[1,-2.5e3,true,false,null],"c":"\\","d":{"e":"NaN\\\"+1"},"f":[],"g":{}}`, true},
		{`{"":0,"x":[[],{}],"y":"\u0022","z":-0.0}`, true},
		{`{"a":+1}`, false},
		{`{"a":[1,NaN]}`, false},
		{`{"a":"x","b":{"c":[{"d":1..2}]}}`, false},
		{`{"a":"\\\"","b":-Inf}`, false},
		{`{"a":01}`, false},
	} {
		var p fastjson.Parser
		v, err := p.Parse(tc.text)
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		out, _, ok := appendRespObject([]byte("x"), v, nil)
		if ok != tc.ok || ok && string(out) != "x"+tc.text || !ok && string(out) != "x" {
			t.Errorf("%s: %q %v, want ok %v", tc.text, out, ok, tc.ok)
		}
	}
}
