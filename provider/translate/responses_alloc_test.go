//go:build !race

package translate

import "testing"

// The Responses translator allocates nothing in steady state: per request
// (a 100 KB Codex turn, its web_search dropped), per answer and per
// stream event.

func TestResponsesToChatAllocs(t *testing.T) {
	body := codexBody(t, 100<<10)
	opt := Options{Model: []byte("claude-sonnet-4-5"), Stream: true}
	var dst []byte
	if n := testing.AllocsPerRun(50, func() {
		var err error
		var dropped []string
		if dst, dropped, err = ResponsesToChat(dst[:0], body, opt); err != nil || len(dropped) != 1 {
			t.Fatal(err, dropped)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per request", n)
	}
	// Function tools whose parameters hold numbers, checked one by one.
	body = convBody(convResponses, 16<<10)
	if n := testing.AllocsPerRun(50, func() {
		var err error
		if dst, _, err = ResponsesToChat(dst[:0], body, opt); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per request with numbers in parameters", n)
	}
}

// A turn of Codex's client-executed tool search (its call, the tools it
// loaded) translates without allocating either.
func TestResponsesToChatToolSearchAllocs(t *testing.T) {
	body := []byte(`{"model":"gpt-5.5","stream":true,"tools":[{"type":"function","name":"exec_command"},` +
		`{"type":"tool_search","execution":"client","description":"Find tools.","parameters":{"type":"object","properties":{"query":{"type":"string"}}}},{"type":"web_search"}],"input":[` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]},` +
		`{"type":"tool_search_call","call_id":"c1","execution":"client","arguments":{"query":"echo","limit":8}},` +
		`{"type":"tool_search_output","call_id":"c1","execution":"client","tools":[{"type":"namespace","name":"mcp__echo","tools":[` +
		`{"type":"function","name":"say","defer_loading":true,"parameters":{"type":"object"}}]}]}]}`)
	opt := Options{Model: []byte("claude-sonnet-4-5"), Stream: true}
	var dst []byte
	if n := testing.AllocsPerRun(50, func() {
		var err error
		if dst, _, err = ResponsesToChat(dst[:0], body, opt); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per request", n)
	}
}

func TestChatToResponsesAllocs(t *testing.T) {
	var dst []byte
	if n := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = ChatToResponses(dst[:0], benchRespChatAnswer, []byte("gpt-5.1-codex")); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per answer", n)
	}
}

func TestResponsesStreamAllocs(t *testing.T) {
	for _, tc := range []struct{ name, open, delta string }{
		{"text", respChunk(`{"content":"a"}`, ""), respChunk(`{"content":" check the cart"}`, "")},
		{"arguments", respChunk(`{"tool_calls":[{"index":0,"id":"t","function":{"name":"f","arguments":""}}]}`, ""),
			respChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1"}}]}`, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewResponsesStream([]byte("m"))
			dst, err := s.Chunk(nil, []byte(tc.open))
			if err != nil {
				t.Fatal(err)
			}
			for range 64 { // grow the held buffers first
				dst, _ = s.Chunk(dst[:0], []byte(tc.delta))
			}
			delta := []byte(tc.delta)
			if n := testing.AllocsPerRun(200, func() {
				if dst, err = s.Chunk(dst[:0], delta); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Fatalf("%v allocations per event", n)
			}
		})
	}
}

// A whole stream, from NewResponsesStream to Release, allocates nothing
// once a released stream's buffers are there to reuse: the ids, the text
// held for the done events and the terminal event's output all live in
// them.
func TestResponsesWholeStreamAllocs(t *testing.T) {
	chunks := make([][]byte, len(releaseFirst))
	for i, c := range releaseFirst {
		chunks[i] = []byte(c)
	}
	model := []byte("gpt-5.1-codex")
	var dst []byte
	run := func() {
		s := NewResponsesStream(model)
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
