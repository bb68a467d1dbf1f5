package telemetry

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// LogBufferBytes bounds the log lines a LogWriter holds that its output has
// not taken yet; lines past it are dropped and counted (docs/operations.md,
// Metrics and logs).
const LogBufferBytes = 4 << 20

// famLogDropped counts the lines a LogWriter dropped.
const famLogDropped = "switchyard_log_lines_dropped_total"

// LogWriter takes the process's log lines off the request path: Write copies
// a line into memory and returns, and a goroutine of the writer's own writes
// what has gathered to the output, many lines in one write(2) when they come
// fast, at once when they come one by one (docs/design.md, The log writer).
// A stalled output never blocks Write: past LogBufferBytes lines are dropped,
// counted, and once the output takes lines again one line says how many.
//
// Each Write is taken as one whole line (zerolog writes a line per call) and
// written whole, in the order of the Writes. Safe for concurrent use; call
// Close before the process exits, or buffered lines are lost.
type LogWriter struct {
	out io.Writer

	mu      sync.Mutex
	buf     []byte // lines not yet handed to the goroutine
	pending uint64 // lines dropped since the last note
	closing bool   // Close was called: the goroutine drains and stops
	stopped bool   // the goroutine has stopped: Write writes through to out

	wake    chan struct{} // cap 1: lines are waiting, or Close was called
	done    chan struct{} // closed when the goroutine stops
	dropped atomic.Uint64 // lines dropped in all

	// Owned by the goroutine.
	spare   []byte
	noteBuf bytes.Buffer
	// note writes the dropped-lines note into noteBuf (set by setFormat).
	note atomic.Pointer[zerolog.Logger]
}

// NewLogWriter returns a LogWriter writing to out and starts its goroutine.
// Its own note about dropped lines is a JSON line until NewLogger, given the
// writer, makes it take the log's format.
func NewLogWriter(out io.Writer) *LogWriter {
	w := &LogWriter{
		out:   out,
		buf:   make([]byte, 0, 64<<10),
		spare: make([]byte, 0, 64<<10),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	w.setFormat("json")
	go w.loop()
	return w
}

// setFormat makes the dropped-lines note a line of format (json or
// console).
func (w *LogWriter) setFormat(format string) {
	var out io.Writer = &w.noteBuf
	if format == "console" {
		out = consoleWriter(out)
	}
	l := zerolog.New(out).With().Timestamp().Logger()
	w.note.Store(&l)
}

// Write copies p, one log line, into the buffer and wakes the goroutine; it
// never waits for the output. A line that does not fit in LogBufferBytes is
// dropped and counted. It always returns len(p), nil: a log line is never
// the caller's error. After Close, it writes p to the output itself. It does
// not allocate once the buffers have grown to the traffic's size.
func (w *LogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.stopped {
		// Rare path: lines logged after Close (a request that outlived
		// the drain) go out at once, in order, one write each.
		_, _ = w.out.Write(p)
		w.mu.Unlock()
		return len(p), nil
	}
	if len(w.buf)+len(p) > LogBufferBytes {
		// Slow path: the output is not keeping up.
		w.pending++
		w.mu.Unlock()
		w.dropped.Add(1)
		w.signal() // the note must follow even if nothing else is logged
		return len(p), nil
	}
	wasEmpty := len(w.buf) == 0
	w.buf = append(w.buf, p...)
	w.mu.Unlock()
	if wasEmpty {
		// The goroutine empties the buffer only after a wake, so lines
		// added to a non-empty one are seen by the wake already sent.
		w.signal()
	}
	return len(p), nil
}

// signal wakes the goroutine unless a wake is already waiting.
func (w *LogWriter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// loop writes what gathered each time it is woken, until Close.
func (w *LogWriter) loop() {
	defer close(w.done)
	for range w.wake {
		// Let the goroutines already runnable (requests finishing) add
		// their lines, so one write(2) carries them all; when nothing
		// else is runnable this returns at once. No timer: an idle
		// gateway's line is written as soon as it is logged.
		runtime.Gosched()
		if w.drain() {
			return
		}
	}
}

// drain writes the buffer until it is empty, then the note about lines
// dropped meanwhile; it reports whether Close was called and everything is
// written (Write then writes through).
func (w *LogWriter) drain() (stop bool) {
	for {
		w.mu.Lock()
		if len(w.buf) == 0 && w.pending == 0 {
			w.stopped = w.closing
			w.mu.Unlock()
			return w.stopped
		}
		// Swap: Write fills the other buffer while this one is written.
		lines := w.buf
		w.buf, w.spare = w.spare[:0], lines
		dropped := w.pending
		w.pending = 0
		w.mu.Unlock()
		if len(lines) > 0 {
			if n, err := w.out.Write(lines); err != nil {
				// The output refused the rest (closed): those lines are lost.
				lost := uint64(bytes.Count(lines[min(n, len(lines)):], []byte{'\n'}))
				w.dropped.Add(lost)
				dropped += lost
			}
		}
		if dropped > 0 {
			w.writeNote(dropped)
		}
	}
}

// writeNote writes one line saying that n lines were dropped: it follows
// the lines written before the drop and precedes those after.
func (w *LogWriter) writeNote(n uint64) {
	w.noteBuf.Reset()
	w.note.Load().WithLevel(zerolog.WarnLevel).Uint64("dropped_lines", n).
		Msg("log output fell behind: dropped " + strconv.FormatUint(n, 10) + " log lines (switchyard_log_lines_dropped_total)")
	_, _ = w.out.Write(w.noteBuf.Bytes())
}

// Close writes every line buffered (and a note of lines dropped) to the
// output and stops the goroutine; later Writes write through. It returns
// ctx.Err() if ctx ends first — the output is stalled — leaving the rest
// to be written should the output resume; the process is then expected to
// exit. Safe to call more than once.
func (w *LogWriter) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.signal()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dropped returns the number of lines dropped so far.
func (w *LogWriter) Dropped() uint64 { return w.dropped.Load() }

// WritePrometheus writes switchyard_log_lines_dropped_total with its # HELP
// and # TYPE lines (for Metrics.AddSeries).
func (w *LogWriter) WritePrometheus(out io.Writer) {
	var scratch [256]byte
	b := appendMetadata(scratch[:0], famLogDropped, "counter")
	b = append(b, famLogDropped...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, w.Dropped(), 10)
	b = append(b, '\n')
	_, _ = out.Write(b)
}
