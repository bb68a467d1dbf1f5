package translate

import (
	"strings"
	"testing"
)

// TestChatToMessages reads like the answer half of the mapping table: a
// chat completion in, the Messages API answer out.
func TestChatToMessages(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"text becomes a text block, stop is end_turn; usage in Anthropic's terms",
			`{"id":"chatcmpl-9x","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_1",` +
				`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
			`{"id":"msg_chatcmpl-9x","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hello!"}],` +
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}`},
		{"cached tokens: input_tokens excludes them, cache_read_input_tokens is them",
			`{"id":"c","choices":[{"message":{"content":"ok"},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":2006,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0}}}`,
			`{"id":"msg_c","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],` +
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":86,"cache_creation_input_tokens":0,"cache_read_input_tokens":1920,"output_tokens":300}}`},
		{"tool_calls become tool_use blocks, arguments parsed to input; tool_calls is tool_use",
			`{"id":"c","choices":[{"message":{"content":null,"tool_calls":[` +
				`{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"n\":[1,{\"a\":null}]}"}},` +
				`{"id":"call_2","type":"function","function":{"name":"noargs","arguments":""}}]},"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":5,"completion_tokens":7}}`,
			`{"id":"msg_c","type":"message","role":"assistant","model":"claude-x","content":[` +
				`{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris","n":[1,{"a":null}]}},` +
				`{"type":"tool_use","id":"call_2","name":"noargs","input":{}}],` +
				`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":7}}`},
		{"text before tool calls keeps its place; length is max_tokens",
			`{"id":"c","choices":[{"message":{"content":"Checking.","tool_calls":[{"id":"call_1","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"length"}]}`,
			`{"id":"msg_c","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"call_1","name":"f","input":{}}],` +
				`"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"content_filter is refusal; the refusal text is a text block",
			`{"id":"c","choices":[{"message":{"content":null,"refusal":"I can't help with that."},"finish_reason":"content_filter"}]}`,
			`{"id":"msg_c","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"I can't help with that."}],` +
				`"stop_reason":"refusal","stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"content as parts (some servers); empty text makes no block; unknown finish is end_turn",
			`{"id":"c","choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":""},{"type":"text","text":"b"}]},"finish_reason":"eos"}]}`,
			`{"id":"msg_c","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],` +
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
	} {
		got, err := ChatToMessages(nil, []byte(tc.in), []byte("claude-x"))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		sameJSON(t, tc.name, got, tc.want)
	}
}

// TestChatToMessagesID: the id is msg_ + the chat id, or a fresh one.
func TestChatToMessagesID(t *testing.T) {
	got, err := ChatToMessages(nil, []byte(`{"choices":[{"message":{"content":"x"}}]}`), []byte("m"))
	if err != nil || !strings.HasPrefix(string(got), `{"id":"msg_`) || strings.HasPrefix(string(got), `{"id":"msg_"`) {
		t.Fatalf("%s %v", got, err)
	}
}

// TestChatToMessagesRefuses: an answer that breaks the chat protocol is an
// error (the walk's protocol failure: failover-safe, else 502), never a
// guessed input.
func TestChatToMessagesRefuses(t *testing.T) {
	for _, in := range []string{
		`not json`,
		`[]`,
		`{"id":"c","choices":[]}`,
		`{"id":"c","choices":[{"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"city\":"}}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"[1,2]"}}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"\"x\""}}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{} {}"}}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"a":1}}}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"arguments":"{}"}}]}}]}`,
	} {
		if got, err := ChatToMessages(nil, []byte(in), []byte("m")); err == nil {
			t.Errorf("%s: accepted as %s", in, got)
		}
	}
}
