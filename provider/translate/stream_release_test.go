package translate

import (
	"bytes"
	"testing"
)

// A released stream is reused by the next one: nothing of the first may
// show in the second. Each stream translator is run through a first answer
// that leaves every piece of its state set (an open tool call, a refusal,
// a second message, usage, a failure), reset, and run through a second
// answer: the events must be those of a new stream.

// releaseFirst is an answer that sets every field of a stream's state.
var releaseFirst = []string{
	respChunk(`{"role":"assistant","content":"Hello"}`, ""),
	respChunk(`{"refusal":"no"}`, ""),
	respChunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"ns--f","arguments":"{\"a\":"}}]}`, ""),
	respChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`, ""),
	respChunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"p--freeform","arguments":"{\"input\":\"x\"}"}}]}`, ""),
	respChunk(`{"content":"after"}`, "length"),
	respUsageChunk,
}

// releaseSecond is a short answer of another upstream id.
var releaseSecond = []string{
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000002,"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000002,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_c","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
}

// feedStream runs chunks through s, then Done (or Fail when fail is set).
func feedStream(t *testing.T, s Stream, chunks []string, fail bool) []byte {
	t.Helper()
	var out []byte
	for _, c := range chunks {
		var err error
		if out, err = s.Chunk(out, []byte(c)); err != nil {
			t.Fatalf("chunk %s: %v", c, err)
		}
	}
	if fail {
		return s.Fail(out, 502, "upstream_error", "upstream_error", "cut")
	}
	out, err := s.Done(out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestResponsesStreamResetIsNew(t *testing.T) {
	for _, fail := range []bool{false, true} {
		want := feedStream(t, &responsesStream{meta: respMeta{model: []byte("m2")}, lastChat: -1}, releaseSecond, false)

		s := &responsesStream{meta: respMeta{model: []byte("first-model")}, lastChat: -1}
		feedStream(t, s, releaseFirst, fail)
		s.reset()
		s.meta.model = append(s.meta.model, "m2"...) // as NewResponsesStream does
		if got := feedStream(t, s, releaseSecond, false); !bytes.Equal(got, want) {
			t.Fatalf("a reset stream (first one failed: %v) writes\n%s\nwant\n%s", fail, got, want)
		}
	}
}

func TestMessagesStreamResetIsNew(t *testing.T) {
	first := []string{
		chunk(`{"role":"assistant","content":"Hello"}`),
		chunk(`{"tool_calls":[{"index":0,"id":"toolu_a","function":{"name":"f","arguments":"{\"a\":1}"}}]}`),
		chunk(`{"tool_calls":[{"index":2,"id":"toolu_b","function":{"name":"g","arguments":"{\"b\":"}}]}`),
		usageChunk,
	}
	second := []string{chunk(`{"content":"Hi"}`), finish("stop")}
	want := feedStream(t, &messagesStream{model: []byte("m2"), open: -1, openTool: -1}, second, false)

	s := &messagesStream{model: []byte("first-model"), open: -1, openTool: -1}
	feedStream(t, s, first, true) // the open tool call's arguments are cut: failed
	s.reset()
	s.model = append(s.model, "m2"...) // as NewMessagesStream does
	if got := feedStream(t, s, second, false); !bytes.Equal(got, want) {
		t.Fatalf("a reset stream writes\n%s\nwant\n%s", got, want)
	}
}
