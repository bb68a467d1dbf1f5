//go:build !race

package translate

import "testing"

// Translating a request, an answer and a stream event allocates nothing
// once the pools are warm (dst reused, as the wiring reuses its buffers).
func TestMessagesToChatAllocatesNothing(t *testing.T) {
	body := []byte(requestSeeds[1])
	o := Options{Model: []byte("gpt-4o"), MaxCompletionTokens: true, Stream: true}
	dst := make([]byte, 0, 4096)
	run := func() {
		var err error
		if dst, _, err = MessagesToChat(dst[:0], body, o); err != nil {
			t.Fatal(err)
		}
	}
	run()
	// The request names one server tool: the dropped list and its name
	// are its allocations (a request without one has none).
	if n := testing.AllocsPerRun(200, run); n > 2 {
		t.Errorf("MessagesToChat allocates %v times, want at most 2 (the dropped list)", n)
	}
	body = []byte(requestSeeds[0])
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Errorf("MessagesToChat allocates %v times, want 0", n)
	}
}

func TestChatToMessagesAllocatesNothing(t *testing.T) {
	chat := []byte(answerSeeds[1])
	dst := make([]byte, 0, 4096)
	run := func() {
		var err error
		if dst, err = ChatToMessages(dst[:0], chat, []byte("claude-x")); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Errorf("ChatToMessages allocates %v times, want 0", n)
	}
}

func TestMessagesStreamEventAllocatesNothing(t *testing.T) {
	s := NewMessagesStream([]byte("claude-x"))
	dst := make([]byte, 0, 4096)
	dst, _ = s.Chunk(dst, []byte(chunk(`{"role":"assistant","content":""}`)))
	text := []byte(chunk(`{"content":"Hello, world"}`))
	if n := testing.AllocsPerRun(500, func() { dst, _ = s.Chunk(dst[:0], text) }); n != 0 {
		t.Errorf("a text event allocates %v times, want 0", n)
	}
	dst, _ = s.Chunk(dst[:0], []byte(chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":""}}]}`)))
	args := []byte(chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"x\","}}]}`))
	dst, _ = s.Chunk(dst[:0], []byte(chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":["}}]}`)))
	if n := testing.AllocsPerRun(500, func() { dst, _ = s.Chunk(dst[:0], args) }); n != 0 {
		t.Errorf("an arguments event allocates %v times, want 0", n)
	}
}

// A whole stream, from NewMessagesStream to Release, allocates nothing
// once a released stream is there to reuse.
func TestMessagesWholeStreamAllocs(t *testing.T) {
	var chunks [][]byte
	for _, c := range []string{chunk(`{"role":"assistant","content":"Hi"}`),
		chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"a\":1}"}}]}`),
		finish("tool_calls"), usageChunk} {
		chunks = append(chunks, []byte(c))
	}
	model := []byte("claude-x")
	var dst []byte
	run := func() {
		s := NewMessagesStream(model)
		for _, c := range chunks {
			var err error
			if dst, err = s.Chunk(dst[:0], c); err != nil {
				t.Fatal(err)
			}
		}
		dst, _ = s.Done(dst[:0])
		s.Release()
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocations per stream", n)
	}
}
