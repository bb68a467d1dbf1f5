package provider

import (
	"bufio"
	"testing"
)

// Relaying a named event decodes it without allocating.
func TestEventDecoderAllocsZero(t *testing.T) {
	for _, tc := range []struct {
		dec   StreamDecoder
		event []byte
	}{{responsesEvents, relayEventResponses}, {messagesEvents, relayEventMessages}} {
		r := bufio.NewReader(&cycleReader{data: tc.event})
		dst := make([]byte, 0, 4096)
		if allocs := testing.AllocsPerRun(1000, func() {
			var err error
			if dst, err = tc.dec.Next(dst[:0], r); err != nil || len(dst) != len(tc.event) {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("%s: %v allocations per event", tc.event[:30], allocs)
		}
	}
}
