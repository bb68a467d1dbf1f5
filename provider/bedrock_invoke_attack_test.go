package provider

import (
	"errors"
	"strings"
	"testing"
)

// TestInvokeStreamChunkHoldsOneEvent: a chunk whose bytes decode to more
// than one JSON value (two events back to back, or with a line between
// them that would split into two SSE events, or trailing bytes) is a
// malformed chunk, never relayed: the client would read events Bedrock's
// own decoder does not.
func TestInvokeStreamChunkHoldsOneEvent(t *testing.T) {
	for _, ev := range []string{
		`{"type":"ping"}{"type":"message_stop"}`,
		`{"type":"ping"}` + "\n\n" + `{"type":"message_stop"}`,
		`{"type":"ping"}` + "\ndata: " + `{"type":"message_stop"}`,
		`{"type":"ping"} x`,
		`{"type":"ping"}` + "\x00",
	} {
		frames, _, err := drain(t, join(chunkFrame(t, evStart), chunkFrame(t, ev), chunkFrame(t, evStop)), 64)
		var se *StreamError
		if !errors.As(err, &se) || se.Class != ClassTransport || !strings.Contains(string(se.Body), "not a JSON object") {
			t.Errorf("%q: %v", ev, err)
		}
		if strings.Contains(strings.Join(frames, ""), "message_stop") {
			t.Errorf("%q: a message_stop was relayed: %q", ev, frames)
		}
	}
}
