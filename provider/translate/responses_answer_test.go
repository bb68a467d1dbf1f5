package translate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/responses"
)

// The answer mapping, case by case: a chat completion in, the whole
// Responses object out.
var respAnswerCases = []struct {
	name, chat, want string
}{
	{
		name: "text becomes a message with output_text; usage keeps cached and reasoning tokens; ids derive from the chat id",
		chat: `{"id":"chatcmpl-9","object":"chat.completion","created":1700000000,"model":"claude-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":80},"completion_tokens_details":{"reasoning_tokens":5}}}`,
		want: `{"id":"resp_chatcmpl-9","object":"response","created_at":1700000000,"status":"completed","background":false,"error":null,"incomplete_details":null,
			"instructions":null,"max_output_tokens":null,"model":"gpt-5.1-codex","output":[
				{"id":"msg_chatcmpl-9","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Hello."}]}],
			"parallel_tool_calls":true,"previous_response_id":null,"temperature":null,"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled",
			"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":80},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":5},"total_tokens":120},
			"user":null,"metadata":{}}`,
	},
	{
		name: "tool calls become function_call items; a namespaced name splits into namespace and name; a custom tool's call is a custom_tool_call with its input",
		chat: `{"id":"msg_01","created":1,"choices":[{"index":0,"message":{"role":"assistant","content":"On it.","tool_calls":[
				{"id":"toolu_1","type":"function","function":{"name":"shell_command","arguments":"{\"command\":\"ls\"}"}},
				{"id":"toolu_2","type":"function","function":{"name":"mcp__github--create_issue","arguments":"{\"title\":\"t\"}"}},
				{"id":"toolu_3","type":"function","function":{"name":"apply_patch--freeform","arguments":"{\"input\":\"*** Begin Patch\\n*** End Patch\\n\"}"}}]},
			"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
		want: `{"id":"resp_msg_01","object":"response","created_at":1,"status":"completed","background":false,"error":null,"incomplete_details":null,
			"instructions":null,"max_output_tokens":null,"model":"gpt-5.1-codex","output":[
				{"id":"msg_msg_01","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"On it."}]},
				{"id":"fc_toolu_1","type":"function_call","status":"completed","arguments":"{\"command\":\"ls\"}","call_id":"toolu_1","name":"shell_command"},
				{"id":"fc_toolu_2","type":"function_call","status":"completed","arguments":"{\"title\":\"t\"}","call_id":"toolu_2","name":"create_issue","namespace":"mcp__github"},
				{"id":"ctc_toolu_3","type":"custom_tool_call","status":"completed","input":"*** Begin Patch\n*** End Patch\n","call_id":"toolu_3","name":"apply_patch"}],
			"parallel_tool_calls":true,"previous_response_id":null,"temperature":null,"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled",
			"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":7},
			"user":null,"metadata":{}}`,
	},
	{
		name: "a refusal is a refusal part; the length running out is incomplete with max_output_tokens; no usage is null",
		chat: `{"id":"c","created":2,"choices":[{"index":0,"message":{"role":"assistant","content":"Part","refusal":"I can't."},"finish_reason":"length"}]}`,
		want: `{"id":"resp_c","object":"response","created_at":2,"status":"incomplete","background":false,"error":null,"incomplete_details":{"reason":"max_output_tokens"},
			"instructions":null,"max_output_tokens":null,"model":"gpt-5.1-codex","output":[
				{"id":"msg_c","type":"message","status":"incomplete","role":"assistant","content":[
					{"type":"output_text","annotations":[],"logprobs":[],"text":"Part"},{"type":"refusal","refusal":"I can't."}]}],
			"parallel_tool_calls":true,"previous_response_id":null,"temperature":null,"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled",
			"usage":null,"user":null,"metadata":{}}`,
	},
	{
		name: "a content filter stop is incomplete with content_filter; empty content gives no items",
		chat: `{"id":"c","created":2,"choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"content_filter"}]}`,
		want: `{"id":"resp_c","object":"response","created_at":2,"status":"incomplete","background":false,"error":null,"incomplete_details":{"reason":"content_filter"},
			"instructions":null,"max_output_tokens":null,"model":"gpt-5.1-codex","output":[],
			"parallel_tool_calls":true,"previous_response_id":null,"temperature":null,"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled",
			"usage":null,"user":null,"metadata":{}}`,
	},
	{
		name: "content parts join; a custom call whose arguments are not {input} keeps them as the input; a call without id gets a derived one",
		chat: `{"id":"x/y z","created":3,"choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"tool_calls":[
				{"type":"function","function":{"name":"note--freeform","arguments":"plain text"}}]},"finish_reason":"tool_calls"}]}`,
		want: `{"id":"resp_xyz","object":"response","created_at":3,"status":"completed","background":false,"error":null,"incomplete_details":null,
			"instructions":null,"max_output_tokens":null,"model":"gpt-5.1-codex","output":[
				{"id":"msg_xyz","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"ab"}]},
				{"id":"ctc_call_xyz_0","type":"custom_tool_call","status":"completed","input":"plain text","call_id":"call_xyz_0","name":"note"}],
			"parallel_tool_calls":true,"previous_response_id":null,"temperature":null,"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled",
			"usage":null,"user":null,"metadata":{}}`,
	},
	{
		name: "a call of the client's tool search is a tool_search_call with its arguments as an object; arguments that are not one stay a string",
		chat: `{"id":"msg_02","created":1,"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
				{"id":"toolu_4","type":"function","function":{"name":"tool_search--client","arguments":"{ \"query\": \"echo say\",\n \"limit\": 8 }"}},
				{"id":"toolu_5","type":"function","function":{"name":"tool_search--client","arguments":"echo"}}]},
			"finish_reason":"tool_calls"}]}`,
		want: `{"id":"resp_msg_02","object":"response","created_at":1,"status":"completed","background":false,"error":null,"incomplete_details":null,
			"instructions":null,"max_output_tokens":null,"model":"gpt-5.1-codex","output":[
				{"id":"tsc_toolu_4","type":"tool_search_call","status":"completed","execution":"client","arguments":{"query":"echo say","limit":8},"call_id":"toolu_4"},
				{"id":"tsc_toolu_5","type":"tool_search_call","status":"completed","execution":"client","arguments":"echo","call_id":"toolu_5"}],
			"parallel_tool_calls":true,"previous_response_id":null,"temperature":null,"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled",
			"usage":null,"user":null,"metadata":{}}`,
	},
}

func TestChatToResponses(t *testing.T) {
	for _, tc := range respAnswerCases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ChatToResponses([]byte("p"), []byte(tc.chat), []byte("gpt-5.1-codex"))
			if err != nil {
				t.Fatal(err)
			}
			if out[0] != 'p' {
				t.Fatalf("dst was not appended to")
			}
			respJSONEqual(t, out[1:], tc.want)
		})
	}
}

// An upstream that sends no id still gets distinct ids for distinct
// answers, and the same id for the same bytes (a pure function).
func TestChatToResponsesIDWithoutUpstreamID(t *testing.T) {
	id := func(chat string) string {
		out, err := ChatToResponses(nil, []byte(chat), []byte("m"))
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ ID string }
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	a := `{"choices":[{"message":{"content":"one"},"finish_reason":"stop"}]}`
	b := `{"choices":[{"message":{"content":"two"},"finish_reason":"stop"}]}`
	first, again := id(a), id(a)
	if first != again || first == id(b) || len(first) != len("resp_")+16 {
		t.Fatalf("ids %q %q", id(a), id(b))
	}
}

func TestChatToResponsesRefusesWhatIsNotAChatCompletion(t *testing.T) {
	for _, chat := range []string{
		``, `null`, `[]`, `{"choices":{}}`, `{"choices":[]}`, `{"choices":[1]}`, `{"choices":[{"message":"x"}]}`,
		`{"error":{"message":"overloaded"}}`, `{"choices":[{"message":{"tool_calls":[{"id":"t","function":{"arguments":"{}"}}]}}]}`,
	} {
		if out, err := ChatToResponses([]byte("keep"), []byte(chat), []byte("m")); err == nil || string(out) != "keep" {
			t.Errorf("%s: got %q, %v", chat, out, err)
		}
	}
}

// requiredResponseFields are the members openai-go's Response marks
// api:"required" (and the npm types require), checked by their presence in
// the raw JSON the SDK kept.
func checkRespSDKResponse(t *testing.T, r *responses.Response) {
	t.Helper()
	for name, f := range map[string]respjson.Field{
		"id": r.JSON.ID, "created_at": r.JSON.CreatedAt, "error": r.JSON.Error, "incomplete_details": r.JSON.IncompleteDetails,
		"instructions": r.JSON.Instructions, "metadata": r.JSON.Metadata, "model": r.JSON.Model, "object": r.JSON.Object,
		"output": r.JSON.Output, "parallel_tool_calls": r.JSON.ParallelToolCalls, "temperature": r.JSON.Temperature,
		"tool_choice": r.JSON.ToolChoice, "tools": r.JSON.Tools, "top_p": r.JSON.TopP, "status": r.JSON.Status,
	} {
		if f.Raw() == respjson.Omitted {
			t.Errorf("response lacks %s", name)
		}
	}
	if len(r.JSON.ExtraFields) != 0 {
		t.Errorf("fields the SDK does not know: %v", r.JSON.ExtraFields)
	}
}

// openai-go's own Response type reads the answers: the fields the SDK
// requires are there, the typed views of each item agree with the chat
// answer, and OutputText is the text.
func TestChatToResponsesSDK(t *testing.T) {
	out, err := ChatToResponses(nil, []byte(respAnswerCases[1].chat), []byte("gpt-5.1-codex"))
	if err != nil {
		t.Fatal(err)
	}
	var r responses.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	checkRespSDKResponse(t, &r)
	if r.Status != responses.ResponseStatusCompleted || r.OutputText() != "On it." || len(r.Output) != 4 {
		t.Fatalf("status %q text %q items %d", r.Status, r.OutputText(), len(r.Output))
	}
	fc := r.Output[2].AsFunctionCall()
	if fc.CallID != "toolu_2" || fc.Name != "create_issue" || fc.Namespace != "mcp__github" || fc.Arguments != `{"title":"t"}` {
		t.Fatalf("namespaced call %+v", fc)
	}
	ct := r.Output[3].AsCustomToolCall()
	if r.Output[3].Type != "custom_tool_call" || ct.CallID != "toolu_3" || ct.Name != "apply_patch" || ct.Input != "*** Begin Patch\n*** End Patch\n" {
		t.Fatalf("custom call %+v", ct)
	}
	if r.Usage.InputTokens != 3 || r.Usage.OutputTokens != 4 || r.Usage.TotalTokens != 7 {
		t.Fatalf("usage %+v", r.Usage)
	}

	out, err = ChatToResponses(nil, []byte(respAnswerCases[0].chat), []byte("gpt-5.1-codex"))
	if err != nil {
		t.Fatal(err)
	}
	r = responses.Response{}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	checkRespSDKResponse(t, &r)
	if r.Usage.InputTokensDetails.CachedTokens != 80 || r.Usage.OutputTokensDetails.ReasoningTokens != 5 || r.CreatedAt != 1700000000 {
		t.Fatalf("usage %+v created %v", r.Usage, r.CreatedAt)
	}

	out, err = ChatToResponses(nil, []byte(respAnswerCases[2].chat), []byte("m"))
	if err != nil {
		t.Fatal(err)
	}
	r = responses.Response{}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != responses.ResponseStatusIncomplete || r.IncompleteDetails.Reason != "max_output_tokens" ||
		r.Output[0].Content[1].Refusal != "I can't." {
		t.Fatalf("incomplete answer read as %+v", r)
	}
	if !bytes.Contains(out, []byte(`"usage":null`)) {
		t.Fatalf("absent usage not null")
	}
}

// An answer's output items, sent back as input (as Codex does, and as the
// gateway's WebSocket memory does for it), become the assistant message
// the chat model produced: text, then its tool calls with their ids and
// names, custom and namespaced ones included.
func TestChatToResponsesRoundTrip(t *testing.T) {
	chat := respAnswerCases[1].chat
	out, err := ChatToResponses(nil, []byte(chat), []byte("gpt-5.1-codex"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Output []json.RawMessage }
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	items := []json.RawMessage{json.RawMessage(`{"role":"user","content":"q"}`)}
	items = append(items, r.Output...)
	req, _ := json.Marshal(map[string]any{"model": "m", "input": items})
	back, _, err := ResponsesToChat(nil, req, respClaude)
	if err != nil {
		t.Fatal(err)
	}
	var original struct {
		Choices []struct{ Message json.RawMessage }
	}
	if err := json.Unmarshal([]byte(chat), &original); err != nil {
		t.Fatal(err)
	}
	var msg map[string]any
	_ = json.Unmarshal(original.Choices[0].Message, &msg)
	for _, tc := range msg["tool_calls"].([]any) { // arguments compare as JSON below
		f := tc.(map[string]any)["function"].(map[string]any)
		var v any
		_ = json.Unmarshal([]byte(f["arguments"].(string)), &v)
		f["arguments"] = v
	}
	var got struct{ Messages []map[string]any }
	if err := json.Unmarshal(back, &got); err != nil || len(got.Messages) != 2 {
		t.Fatalf("%s", back)
	}
	for _, tc := range got.Messages[1]["tool_calls"].([]any) {
		f := tc.(map[string]any)["function"].(map[string]any)
		var v any
		_ = json.Unmarshal([]byte(f["arguments"].(string)), &v)
		f["arguments"] = v
	}
	a, _ := json.Marshal(got.Messages[1])
	b, _ := json.Marshal(msg)
	respJSONEqual(t, a, string(b))
}

// A chat answer's cache writes (prompt_tokens_details.cache_write_tokens,
// which the gateway writes for answers translated from Anthropic and
// Bedrock) reach the Responses answer as input_tokens_details'
// cache_write_tokens, as openai-go reads it (docs/quotas.md, Cached
// tokens); without any, the field is left out.
func TestChatToResponsesCacheWrites(t *testing.T) {
	chat := `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":100,"completion_tokens":4,"total_tokens":104,"prompt_tokens_details":{"cached_tokens":80,"cache_write_tokens":15}}}`
	out, err := ChatToResponses(nil, []byte(chat), []byte("m"))
	if err != nil {
		t.Fatal(err)
	}
	var r responses.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if d := r.Usage.InputTokensDetails; r.Usage.InputTokens != 100 || d.CachedTokens != 80 || d.CacheWriteTokens != 15 {
		t.Fatalf("usage %+v", r.Usage)
	}
	out, _ = ChatToResponses(nil, []byte(strings.Replace(chat, `,"cache_write_tokens":15`, "", 1)), []byte("m"))
	if bytes.Contains(out, []byte("cache_write_tokens")) {
		t.Fatalf("cache_write_tokens without cache writes: %s", out)
	}
}
