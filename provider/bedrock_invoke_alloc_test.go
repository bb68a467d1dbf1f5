//go:build !race

package provider

import (
	"bufio"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/switchyard/switchyard/router"
)

// Relaying a chunk costs no allocation beyond the frame reader's own (the
// AWS SDK's eventstream.Decoder allocates for each frame's headers, CRC
// and readers): base64, JSON, usage and the SSE frame reuse their buffers.
func TestInvokeStreamAllocsBeyondFrameReader(t *testing.T) {
	const ev = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Tomorrow in Paris expect"}}`
	frame := chunkFrame(t, ev)

	r := bufio.NewReaderSize(&cycleReader{data: frame}, 16<<10)
	var dec eventstream.Decoder
	var payload []byte
	reader := testing.AllocsPerRun(200, func() {
		if err := checkPrelude(r, router.SurfaceMessages); err != nil {
			t.Fatal(err)
		}
		m, err := dec.Decode(r, payload[:0])
		if err != nil {
			t.Fatal(err)
		}
		payload = m.Payload[:0]
	})

	d := newInvokeStream()
	r = bufio.NewReaderSize(&cycleReader{data: frame}, 16<<10)
	dst := make([]byte, 0, 512)
	relay := testing.AllocsPerRun(200, func() {
		var err error
		if dst, err = d.Next(dst[:0], r); err != nil {
			t.Fatal(err)
		}
	})
	if relay > reader {
		t.Errorf("relaying a chunk allocates %.0f times, the frame reader alone %.0f", relay, reader)
	}
	// A message_delta (usage read without a parse) costs the same.
	frame = chunkFrame(t, `{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":7}}`)
	r = bufio.NewReaderSize(&cycleReader{data: frame}, 16<<10)
	if got := testing.AllocsPerRun(200, func() {
		var err error
		if dst, err = d.Next(dst[:0], r); err != nil {
			t.Fatal(err)
		}
	}); got > reader {
		t.Errorf("relaying message_delta allocates %.0f times, the frame reader alone %.0f", got, reader)
	}
}
