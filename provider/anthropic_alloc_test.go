//go:build !race

package provider

import (
	"bufio"
	"testing"

	"github.com/switchyard/switchyard/router"
)

// Translating one Anthropic text delta into a chunk frame allocates
// nothing once the decoder's buffers are warm.
func TestAnthropicStreamEventZeroAlloc(t *testing.T) {
	event := []byte("event: content_block_delta\n" +
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Tomorrow in \"Paris\""}}` + "\n\n")
	dec := newAnthropicAdapter().NewStream(&Call{Surface: router.SurfaceChat, Stream: true, Body: []byte(`{}`), Model: []byte("m")})
	r := bufio.NewReader(&cycleReader{data: event})
	dst := make([]byte, 0, 1024)
	next := func() {
		var err error
		if dst, err = dec.Next(dst[:0], r); err != nil || len(dst) == 0 {
			t.Fatal(err)
		}
	}
	next() // warm up
	if n := testing.AllocsPerRun(200, next); n != 0 {
		t.Fatalf("%v allocs per stream event, want 0", n)
	}
}
