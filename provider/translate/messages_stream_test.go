package translate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// feed runs chunks through a messages stream and its end, returning the
// events written and the first error.
func feed(chunks ...string) (string, error) {
	s := NewMessagesStream([]byte("claude-x"))
	var out []byte
	var err error
	for _, c := range chunks {
		if out, err = s.Chunk(out, []byte(c)); err != nil {
			return string(out), err
		}
	}
	out, err = s.Done(out)
	return string(out), err
}

// accumulate reads events as the Anthropic SDK does (each event's name
// must match its data's type) and builds the message it describes.
func accumulate(t *testing.T, events string) (anthropic.Message, []string) {
	t.Helper()
	var msg anthropic.Message
	var names []string
	for _, ev := range strings.Split(strings.TrimSuffix(events, "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(ev, "\ndata: ")
		name = strings.TrimPrefix(name, "event: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("malformed event %q", ev)
		}
		var u anthropic.MessageStreamEventUnion
		if err := json.Unmarshal([]byte(data), &u); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		if u.Type != name {
			t.Fatalf("event %q carries type %q", name, u.Type)
		}
		if err := msg.Accumulate(u); err != nil {
			t.Fatalf("the SDK refuses %s: %v", data, err)
		}
		names = append(names, name)
	}
	return msg, names
}

func chunk(delta string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":null}]}`
}

func finish(reason string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

const usageChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":9,"total_tokens":2015,"prompt_tokens_details":{"cached_tokens":1920}}}`

// TestMessagesStreamText: message_start at the first chunk, one text block,
// message_delta with the stop reason and usage, message_stop; the SDK
// builds the message the chunks describe.
func TestMessagesStreamText(t *testing.T) {
	out, err := feed(chunk(`{"role":"assistant","content":"","refusal":null}`), chunk(`{"content":"Hello"}`),
		chunk(`{"content":" wor\"ld"}`), finish("stop"), usageChunk)
	if err != nil {
		t.Fatal(err)
	}
	msg, names := accumulate(t, out)
	want := "message_start content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(names, " ") != want {
		t.Errorf("events %v\nwant  %s", names, want)
	}
	if msg.ID != "msg_chatcmpl-1" || msg.Model != "claude-x" || msg.Role != "assistant" || len(msg.Content) != 1 ||
		msg.Content[0].Text != `Hello wor"ld` || msg.StopReason != "end_turn" {
		t.Errorf("message %+v", msg)
	}
	if u := msg.Usage; u.InputTokens != 86 || u.CacheReadInputTokens != 1920 || u.OutputTokens != 9 {
		t.Errorf("usage %+v", u)
	}
}

// TestMessagesStreamToolRound: text, then two tool calls with their
// arguments in fragments; each tool call is its own tool_use block.
func TestMessagesStreamToolRound(t *testing.T) {
	out, err := feed(
		chunk(`{"role":"assistant","content":null}`),
		chunk(`{"content":"Let me check."}`),
		chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Par}is\"}"}}]}`),
		chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]}`),
		finish("tool_calls"), usageChunk)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := accumulate(t, out)
	if len(msg.Content) != 3 || msg.Content[0].Text != "Let me check." || msg.StopReason != "tool_use" {
		t.Fatalf("message %+v", msg)
	}
	for i, want := range []struct{ id, name, input string }{{"call_a", "get_weather", `{"city":"Par}is"}`}, {"call_b", "get_time", `{}`}} {
		b := msg.Content[i+1]
		if b.Type != "tool_use" || b.ID != want.id || b.Name != want.name || string(b.Input) != want.input {
			t.Errorf("block %d: %s %s %s %s", i+1, b.Type, b.ID, b.Name, b.Input)
		}
	}
}

// TestMessagesStreamToolCallsWithoutIndex: servers that send no index, or
// number every call 0, still get one block per call (by its id).
func TestMessagesStreamToolCallsWithoutIndex(t *testing.T) {
	for name, chunks := range map[string][]string{
		"no index": {
			chunk(`{"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`),
			chunk(`{"tool_calls":[{"id":"c2","type":"function","function":{"name":"g","arguments":"{\"b\":"}}]}`),
			chunk(`{"tool_calls":[{"function":{"arguments":"2}"}}]}`),
		},
		"every call index 0": {
			chunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`),
			chunk(`{"tool_calls":[{"index":0,"id":"c2","type":"function","function":{"name":"g","arguments":"{\"b\":"}}]}`),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"2}"}}]}`),
		},
	} {
		out, err := feed(append(chunks, finish("tool_calls"))...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		msg, _ := accumulate(t, out)
		if len(msg.Content) != 2 || msg.Content[0].ID != "c1" || string(msg.Content[0].Input) != `{"a":1}` ||
			msg.Content[1].ID != "c2" || msg.Content[1].Name != "g" || string(msg.Content[1].Input) != `{"b":2}` {
			t.Errorf("%s: %+v", name, msg.Content)
		}
	}
}

// TestMessagesStreamNoUsage: an upstream that ignores include_usage still
// gets a message_delta (usage zero) and message_stop at [DONE].
func TestMessagesStreamNoUsage(t *testing.T) {
	out, err := feed(chunk(`{"content":"x"}`), finish("length"))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := accumulate(t, out)
	if msg.StopReason != "max_tokens" || msg.Usage.OutputTokens != 0 {
		t.Errorf("%+v", msg)
	}
}

// TestMessagesStreamRefuses: a chat stream that breaks the protocol is an
// error, never a guess: the wiring ends the client's stream with its error
// event (or, before the first event, fails over).
func TestMessagesStreamRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   error
	}{
		{"not JSON", []string{`{"choices":[`}, errChunk},
		{"not an object", []string{`[1]`}, errChunk},
		{"content that is not a string", []string{chunk(`{"content":5}`)}, errChunk},
		{"[DONE] before any chunk", nil, errEmptyStream},
		{"arguments cut short", []string{chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"city\":\"Pa"}}]}`), finish("length")}, errArgsNotJSON},
		{"arguments that are not an object", []string{chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"[1]"}}]}`)}, errArgsNotJSON},
		{"arguments with a mismatched bracket", []string{chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"a\":[1}"}}]}`)}, errArgsNotJSON},
		{"bytes after the object", []string{chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{} x"}}]}`)}, errArgsNotJSON},
		{"arguments for a call already ended", []string{
			chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}`),
			chunk(`{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}`),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":" "}}]}`)}, errLateArgs},
		{"a tool call without a name", []string{chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"arguments":"{}"}}]}`)}, errNoToolName},
		{"a tool call index out of range", []string{chunk(`{"tool_calls":[{"index":100000,"id":"a","function":{"name":"f"}}]}`)}, errToolIndex},
		{"a tool call with neither index nor id", []string{chunk(`{"tool_calls":[{"function":{"name":"f"}}]}`)}, errChunk},
	} {
		if _, err := feed(tc.chunks...); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestMessagesStreamFail: the error event ends the stream in Anthropic's
// shape, its type from the status.
func TestMessagesStreamFail(t *testing.T) {
	s := NewMessagesStream([]byte("m"))
	out, _ := s.Chunk(nil, []byte(chunk(`{"content":"a"}`)))
	n := len(out)
	out = s.Fail(out, 529, "upstream_error", "upstream_error", `overloaded "now"`)
	if got := string(out[n:]); got != "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"overloaded \\\"now\\\"\"}}\n\n" {
		t.Errorf("%q", got)
	}
	if _, err := s.Chunk(nil, []byte(chunk(`{"content":"b"}`))); !errors.Is(err, errStreamEnded) {
		t.Errorf("a chunk after the end: %v", err)
	}
	for status, typ := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "invalid_request_error", 429: "rate_limit_error", 500: "api_error", 502: "api_error", 503: "overloaded_error", 504: "api_error"} {
		if got := anthropicErrorType(status); got != typ {
			t.Errorf("%d: %s, want %s", status, got, typ)
		}
	}
}

// TestArgsShape: what the streamed arguments check accepts and refuses.
func TestArgsShape(t *testing.T) {
	for _, tc := range []struct {
		frags []string
		ok    bool
	}{
		{nil, true},
		{[]string{"  "}, true},
		{[]string{"{}"}, true},
		{[]string{`{"a":"}]\"{[","b":[{"c":[]}]}`}, true},
		{[]string{`{"a"`, `:`, `"x\`, `"y"`, `}`, "\n"}, true},
		{[]string{`{`}, false},
		{[]string{`{"a":"x}`}, false},
		{[]string{`{"a":[}`}, false},
		{[]string{`{]`}, false},
		{[]string{`[]`}, false},
		{[]string{`"s"`}, false},
		{[]string{`{}{}`}, false},
		{[]string{`{}`, `,`}, false},
	} {
		var a argsShape
		ok := true
		for _, f := range tc.frags {
			ok = a.feed([]byte(f)) && ok
		}
		if got := ok && a.complete(); got != tc.ok {
			t.Errorf("%q: %v, want %v", tc.frags, got, tc.ok)
		}
	}
	// Nesting deeper than the kind bits: still counted.
	var a argsShape
	deep := strings.Repeat("[", 100)
	if !a.feed([]byte("{\"a\":"+deep+strings.Repeat("]", 100)+"}")) || !a.complete() {
		t.Errorf("deep nesting refused")
	}
}
