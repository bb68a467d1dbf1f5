package provider

import (
	"bufio"
	"io"
	"testing"
)

// The relay's cost per event on the pass-through surfaces, next to chat's:
// decode one text-delta event from the upstream reader, write it to the
// client's buffered writer and flush, as relay does. Each API's own event
// for the same 24-byte text piece.
var (
	relayEventChat      = []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Tomorrow in Paris expect"},"finish_reason":null}]}` + "\n\n")
	relayEventResponses = []byte("event: response.output_text.delta\n" +
		`data: {"type":"response.output_text.delta","sequence_number":12,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Tomorrow in Paris expect"}` + "\n\n")
	relayEventMessages = []byte("event: content_block_delta\n" +
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Tomorrow in Paris expect"}}` + "\n\n")
)

func benchRelayEvent(b *testing.B, dec StreamDecoder, event []byte) {
	r := bufio.NewReaderSize(&cycleReader{data: event}, 16<<10)
	bw := bufio.NewWriterSize(io.Discard, 4096)
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(event)))
	b.ResetTimer()
	for range b.N {
		var err error
		if dst, err = dec.Next(dst[:0], r); err != nil || len(dst) != len(event) {
			b.Fatal(err, len(dst))
		}
		bw.Write(dst) //nolint:errcheck // io.Discard
		bw.Flush()    //nolint:errcheck
	}
}

// BenchmarkRelayEventChat is the baseline: the OpenAI chat SSE relay.
func BenchmarkRelayEventChat(b *testing.B) { benchRelayEvent(b, &SSEDecoder{}, relayEventChat) }

func BenchmarkRelayEventResponses(b *testing.B) {
	benchRelayEvent(b, responsesEvents, relayEventResponses)
}

func BenchmarkRelayEventMessages(b *testing.B) {
	benchRelayEvent(b, messagesEvents, relayEventMessages)
}
