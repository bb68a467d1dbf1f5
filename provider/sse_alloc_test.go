//go:build !race

package provider

import (
	"bufio"
	"testing"
)

// An event with several data lines is joined into the decoder's scratch
// buffer: once warm, relaying or translating one allocates nothing either.
func TestSplitDataEventZeroAlloc(t *testing.T) {
	cases := []struct {
		name  string
		dec   StreamDecoder
		event string
	}{
		{"chat relay", &SSEDecoder{}, "data: {\"choices\":[],\ndata: \"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7}}\n\n"},
		{"messages relay", newEventStream(messagesEvents), "event: message_delta\ndata: {\"type\":\"message_delta\",\ndata: \"usage\":{\"output_tokens\":9}}\n\n"},
		{"anthropic translation", anthropicTestStream(), "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\ndata: \"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"},
	}
	for _, c := range cases {
		r := bufio.NewReader(&cycleReader{data: []byte(c.event)})
		dst := make([]byte, 0, 4096)
		next := func() {
			var err error
			if dst, err = c.dec.Next(dst[:0], r); err != nil || len(dst) == 0 {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		next() // warm up
		if n := testing.AllocsPerRun(200, next); n != 0 {
			t.Errorf("%s: %v allocs per event, want 0", c.name, n)
		}
	}
}
