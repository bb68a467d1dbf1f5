package provider

import (
	"bufio"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/router"
)

// readEvent's own cost per event, by line ending: the chat relay's usual
// event with LF endings (OpenAI's), the same with CRLF endings, and a
// named event of two lines (Anthropic's, Responses').
func benchReadEvent(b *testing.B, event string) {
	r := bufio.NewReaderSize(&cycleReader{data: []byte(event)}, 16<<10)
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(event)))
	b.ResetTimer()
	for range b.N {
		var err error
		if dst, _, err = readEvent(dst[:0], r, router.SurfaceChat); err != nil || len(dst) != len(event) {
			b.Fatal(err, len(dst))
		}
	}
}

func BenchmarkReadEventLF(b *testing.B) { benchReadEvent(b, string(relayEventChat)) }

func BenchmarkReadEventCRLF(b *testing.B) {
	benchReadEvent(b, strings.ReplaceAll(string(relayEventChat), "\n", "\r\n"))
}

func BenchmarkReadEventNamed(b *testing.B) { benchReadEvent(b, string(relayEventMessages)) }
