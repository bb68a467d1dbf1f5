//go:build !race

package telemetry

import (
	"io"
	"testing"
	"time"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// One access line costs no allocation (zerolog pools its event buffers).
func TestAccessLogDoesNotAllocate(t *testing.T) {
	l, err := NewLogger("info", "json", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAccessLog(l)
	e := &Entry{
		RequestID: []byte("0123456789abcdef"), Surface: router.SurfaceChat, Model: []byte("gpt-4o-mini"),
		Rule: 12, Walked: []string{"openai", "azure"}, Target: "azure", Attempts: 2, Status: 200,
		Latency: 420 * time.Millisecond, TTFB: 90 * time.Millisecond, Stream: true, Class: upstream.ClassOK,
		Key: "acme-prod", Usage: upstream.Usage{Prompt: 8, Completion: 21, HasPrompt: true, HasCompletion: true},
		TraceID: []byte("4bf92f3577b34da6a3ce929d0e0e4736"),
	}
	a.Log(e)
	if n := testing.AllocsPerRun(1000, func() { a.Log(e) }); n != 0 {
		t.Fatalf("AccessLog.Log allocates %v times per line, want 0", n)
	}
}
