//go:build !race

package telemetry

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// A line written through the LogWriter costs no allocation once its two
// buffers have grown: the copy goes into memory held from line to line.
func TestLogWriterWriteAlloc(t *testing.T) {
	w := NewLogWriter(io.Discard)
	defer w.Close(context.Background())
	line := []byte(`{"level":"info","request_id":"0123456789abcdef","surface":"chat","model":"gpt-4o-mini","status":200,"message":"request"}` + "\n")
	for range 10000 {
		w.Write(line)
	}
	if n := testing.AllocsPerRun(10000, func() { w.Write(line) }); n != 0 {
		t.Fatalf("LogWriter.Write allocates %v times per line, want 0", n)
	}
}

// An access line through the process logger and the LogWriter, as the
// gateway writes it, costs no allocation.
func TestAccessLogThroughLogWriterAlloc(t *testing.T) {
	w := NewLogWriter(io.Discard)
	defer w.Close(context.Background())
	l, err := NewLogger("info", "json", w)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAccessLog(l)
	e := &Entry{
		RequestID: []byte("0123456789abcdef"), Surface: router.SurfaceChat, Model: []byte("gpt-4o-mini"),
		Rule: 12, Walked: []string{"openai"}, Target: "openai", Attempts: 1, Status: 200,
		Latency: 420 * time.Millisecond, Class: upstream.ClassOK,
	}
	for range 10000 {
		a.Log(e)
	}
	if n := testing.AllocsPerRun(10000, func() { a.Log(e) }); n != 0 {
		t.Fatalf("an access line through the LogWriter allocates %v times, want 0", n)
	}
}
