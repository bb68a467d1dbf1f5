package upstream

import (
	"bufio"
	"errors"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// stream handles a 2xx streaming answer: it reads the first event before
// anything reaches the client (a failure there is an ordinary, failover-safe
// attempt failure), then commits and hands the rest to a stream writer that
// relays event by event. After the commit a failure ends the stream with an
// SSE error frame and no [DONE]; nothing is retried.
func (w *walk) stream(t *Target, ad Adapter, ticket Ticket, resp *fasthttp.Response, t0 time.Time) (outcome, bool) {
	dec := ad.NewStream(w.call)
	surface := w.call.Surface
	br := readerPool.Get().(*bufio.Reader)
	src := resp.BodyStream()
	if src == nil {
		// A 2xx without a body (204, 205): fasthttp gives no stream. The
		// decoder then sees an empty stream, a transport failure, and the
		// walk moves on; a nil reader would panic.
		src = emptyReader{}
	}
	br.Reset(src)
	buf := framePool.Get().(*[]byte)

	// Before the commit the attempt deadline set by DoDeadline still bounds
	// the read.
	frame, err := dec.Next((*buf)[:0], br)
	w.now = w.clk.now() // the first event may take long: done and TTFB need this
	upConn := trackedOfAddr(resp.LocalAddr())
	if err != nil && err != io.EOF {
		o := streamFailure(err, surface)
		o.status = max(o.status, 0)
		o.envelope = t.redact(o.envelope)
		if w.guard.unbind(upConn); w.guard.Gone() {
			// The client left while the first event was awaited.
			o = outcome{class: ClassCanceled}
		}
		resp.CloseBodyStream() //nolint:errcheck // discards the connection if unread
		br.Reset(nil)
		readerPool.Put(br)
		*buf = frame[:0]
		putFrame(buf)
		w.done(t, ticket, o, t0)
		return o, false
	}
	w.res.TTFB = w.now.Sub(w.start)
	w.obs.Attempt(t, ClassOK, resp.StatusCode(), w.now.Sub(t0))

	// Commit.
	rc := w.rc
	rc.SetStatusCode(resp.StatusCode())
	rc.SetContentType("text/event-stream")
	rc.Response.Header.Set(fasthttp.HeaderCacheControl, "no-cache")
	w.res.Status, w.res.Class, w.res.Stream = resp.StatusCode(), ClassOK, true
	w.headers(t)

	res := w.res
	obs, clk, start := w.obs, w.clk, w.start
	laddr := resp.LocalAddr()
	first, firstErr := frame, err
	// A client that stops reading (a zero TCP window, which keep-alive
	// probes do not detect) would block fasthttp's write of the stream for
	// ever, and with it this writer, the upstream connection and the limiter
	// slot. So each frame has t.Timeout to leave; then the server's write
	// fails, it closes the pipe, and the writer ends as for a disconnect.
	// The net.Conn is taken now: it outlives the handler, the RequestCtx
	// may not be touched after it.
	client := clientConn(rc)
	stall := t.Timeout
	// From here the writer owns the ticket, the slot, resp, br, buf and
	// the client watch (which keeps the upstream connection bound: the
	// client leaving cuts a silent upstream's read).
	w.pending = false
	guard := w.guard
	w.guard = nil
	rc.SetBodyStreamWriter(func(bw *bufio.Writer) {
		// fasthttp runs this on its own goroutine with no recover: a panic
		// here (a decoder bug on odd upstream bytes) would take the whole
		// process down and leak the slot and the ticket. The deferred
		// cleanup runs on every way out; a panic ends the stream with an
		// error frame and is reported to obs if it is a PanicObserver.
		class := ClassCanceled
		defer func() {
			breakerClass := class
			if v := recover(); v != nil {
				reportPanic(obs, v)
				writeErrorFrame(bw, surface, internalErrorEnvelope(surface)) //nolint:errcheck // the client may be gone
				// The gateway's bug, not the target's: neutral for the breaker.
				class, breakerClass = ClassTransport, ClassCanceled
			}
			if !guard.unbind(upConn) || guard.Gone() {
				// The client left: whatever the relay saw after its
				// upstream connection was closed is no upstream failure.
				class, breakerClass = ClassCanceled, ClassCanceled
			}
			if class == ClassOK {
				// After [DONE] only the body's terminating chunk should be
				// left: read it (briefly) so the connection goes back to the
				// pool.
				setStreamDeadline(laddr, clk.now().Add(drainTimeout))
				// br.Discard reads like io.Copy to io.Discard through a
				// LimitReader (until EOF, an error or maxDrain bytes) but
				// without allocating the LimitReader.
				br.Discard(maxDrain) //nolint:errcheck
			}
			if client != nil {
				// fasthttp still has to write what the pipe holds and the
				// body's last chunk after this returns: bound that too. The
				// deadline stays behind on the keep-alive connection; the
				// server arms a fresh one before each response it writes
				// (hotpath's Server.WriteTimeout), so it cannot cut the next
				// answer short.
				client.SetWriteDeadline(time.Now().Add(stall)) //nolint:errcheck
			}
			// Closing an unfinished body stream closes the connection, which
			// is how a client disconnect cancels the upstream request.
			resp.CloseBodyStream() //nolint:errcheck
			fasthttp.ReleaseResponse(resp)
			br.Reset(nil)
			readerPool.Put(br)
			putFrame(buf)
			guard.release()
			end := clk.now()
			t.Breaker().Done(ticket, breakerClass, end)
			t.Limiter().Release()
			res.Class = class
			// The observer's own bug must not crash the process either.
			defer func() {
				if v := recover(); v != nil {
					reportPanic(obs, v)
				}
			}()
			obs.StreamEnd(res, end.Sub(start))
		}()
		class = relay(bw, surface, dec, br, first, firstErr, func() {
			// Between events the silence is bounded by the target timeout.
			setStreamDeadline(laddr, clk.now().Add(t.Timeout))
		}, func() {
			if client != nil {
				client.SetWriteDeadline(time.Now().Add(stall)) //nolint:errcheck
			}
		}, t, buf)
	})
	return outcome{class: ClassOK}, true
}

// emptyReader is a body with nothing in it.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, io.EOF }

// PanicObserver is an Observer that also hears of a panic recovered in a
// committed stream's writer (which runs on fasthttp's goroutine, outside
// any handler's recover). v is the panic value and stack the goroutine's
// stack; the stream has already been ended with an internal_error frame.
type PanicObserver interface {
	Observer
	Panicked(v any, stack []byte)
}

// reportPanic hands a recovered panic to obs when it is a PanicObserver.
func reportPanic(obs Observer, v any) {
	if po, ok := obs.(PanicObserver); ok {
		po.Panicked(v, debug.Stack())
	}
}

// internalErrorEnvelope is the error of a gateway bug inside a stream of
// surface s.
func internalErrorEnvelope(s router.Surface) []byte {
	return AppendSurfaceError(nil, s, 500, "internal gateway error", TypeServer, CodeInternalError)
}

// Draining a finished stream for connection reuse is bounded by these.
const (
	drainTimeout = time.Second
	maxDrain     = 64 << 10
)

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledFrame is the largest frame buffer kept for reuse: one huge
// event must not pin megabytes in the pool for good.
const maxPooledFrame = 64 << 10

func putFrame(buf *[]byte) {
	if cap(*buf) <= maxPooledFrame {
		framePool.Put(buf)
	}
}

// relay writes the first frame and then every further one, flushing each.
// It returns the stream's outcome class. A failure ends the stream with
// surface s's error frame, unless the decoder's frame already carried the
// upstream's own error event (StreamError.Framed). beforeRead runs before
// each read from the upstream after the first, beforeWrite before each
// write to the client. Every byte written passes t.redact. buf holds the
// frame buffer for reuse.
func relay(bw *bufio.Writer, s router.Surface, dec StreamDecoder, br *bufio.Reader, frame []byte, err error, beforeRead, beforeWrite func(), t *Target, buf *[]byte) Class {
	defer func() { *buf = frame[:0] }()
	for {
		beforeWrite()
		if len(frame) > 0 {
			frame = t.redact(frame)
			if _, werr := bw.Write(frame); werr != nil {
				return ClassCanceled
			}
		}
		if err != nil {
			if err == io.EOF {
				if bw.Flush() != nil {
					return ClassCanceled
				}
				return ClassOK
			}
			o := streamFailure(err, s)
			if o.framed {
				// The upstream's own error event, already written (and
				// redacted) as the frame above.
				if bw.Flush() != nil {
					return ClassCanceled
				}
				return o.class
			}
			if writeErrorFrame(bw, s, t.redact(o.envelope)) != nil {
				return ClassCanceled
			}
			return o.class
		}
		if bw.Flush() != nil {
			return ClassCanceled
		}
		beforeRead()
		frame, err = dec.Next(frame[:0], br)
	}
}

// streamFailure turns a decoder error into an outcome with its envelope,
// in surface s's shape when the gateway makes it.
func streamFailure(err error, s router.Surface) outcome {
	var se *StreamError
	if errors.As(err, &se) {
		o := outcome{class: se.Class, status: se.Status, envelope: se.Body, framed: se.Framed}
		if len(o.envelope) == 0 {
			// A decoder that gave no envelope must still produce a
			// well-formed error frame (and final answer), not "data: ".
			if o.class == ClassClient || o.class == ClassContextLength {
				o.envelope = AppendSurfaceError(nil, s, 400, "upstream refused the request", TypeInvalidRequest, CodeInvalidRequest)
			} else {
				o.envelope = AppendSurfaceError(nil, s, 502, "upstream stream failed", TypeUpstream, CodeUpstreamError)
			}
		}
		return o
	}
	class := errClass(err)
	if class == ClassTimeout {
		return outcome{class: class, envelope: AppendSurfaceError(nil, s, 504, "upstream stream timed out", TypeUpstream, CodeGatewayTimeout)}
	}
	return outcome{class: class, envelope: AppendSurfaceError(nil, s, 502, "upstream stream failed", TypeUpstream, CodeUpstreamError)}
}

// clientConn returns the client connection of rc if its write deadline can
// be set, else nil. A RequestCtx built by Init (tests, tools) carries a
// placeholder whose deadline methods panic; that is probed once here.
func clientConn(rc *fasthttp.RequestCtx) (c net.Conn) {
	c = rc.Conn()
	if c == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			c = nil
		}
	}()
	if c.SetWriteDeadline(time.Time{}) != nil {
		return nil
	}
	return c
}
