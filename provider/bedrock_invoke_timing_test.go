package provider

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// The relay's cost per event on the messages surface from Bedrock, next to
// the native Messages relay (BenchmarkRelayEventMessages, the same
// 24-byte text delta as an SSE event): read one event-stream chunk frame,
// decode its base64 event, write the SSE event to the client's buffered
// writer and flush.
func BenchmarkRelayEventBedrockMessages(b *testing.B) {
	const ev = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Tomorrow in Paris expect"}}`
	frame := chunkFrame(b, ev)
	want := []byte("event: content_block_delta\ndata: " + ev + "\n\n")
	r := bufio.NewReaderSize(&cycleReader{data: frame}, 16<<10)
	bw := bufio.NewWriterSize(io.Discard, 4096)
	d := newInvokeStream()
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	for range b.N {
		var err error
		if dst, err = d.Next(dst[:0], r); err != nil || !bytes.Equal(dst, want) {
			b.Fatal(err, string(dst))
		}
		bw.Write(dst) //nolint:errcheck // io.Discard
		bw.Flush()    //nolint:errcheck
	}
}
