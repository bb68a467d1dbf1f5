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

	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/router"
)

// readerPool holds the stream decoders' read buffers, on top of fasthttp's
// own read buffer of the upstream connection: small, a longer event is read
// in several slices. A stream takes one only once bytes have arrived and
// gives it back when an event leaves it empty (see relayBody.takeReader),
// so a thousand open streams share a few.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 1<<10) }}

// stream handles a 2xx streaming answer: it reads the first event before
// anything reaches the client (a failure there is an ordinary, failover-safe
// attempt failure), then commits and hands the rest to a stream writer that
// relays event by event. After the commit a failure ends the stream with an
// SSE error frame and no [DONE]; nothing is retried.
func (w *walk) stream(t *Target, ad Adapter, ticket Ticket, resp *fasthttp.Response, t0 time.Time) (outcome, bool) {
	dec := ad.NewStream(w.call)
	surface := w.call.Surface
	src := w.guard.body(resp)
	if src == nil {
		// A 2xx without a body (204, 205): fasthttp gives no stream. The
		// decoder then sees an empty stream, a transport failure, and the
		// walk moves on; a nil reader would panic.
		src = emptyReader{}
	}
	// The decoder's buffers are taken once the first bytes are in.
	w.guard.awaitBody()
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(src)
	buf := framePool.Get().(*[]byte)

	// Before the commit the attempt deadline set by DoDeadline still bounds
	// the read.
	frame, err := dec.Next((*buf)[:0], br)
	w.now = w.clk.now() // the first event may take long: done and TTFB need this
	if err != nil && err != io.EOF {
		o := streamFailure(err, surface)
		o.status = max(o.status, 0)
		o.envelope = t.redact(o.envelope)
		if w.guard.Gone() {
			// The client left while the first event was awaited.
			o = outcome{class: ClassCanceled}
		}
		w.guard.closeStream(resp) // unread: discards the connection
		provider.ReleaseDecoder(dec)
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
	if surface == router.SurfaceResponses {
		w.res.ResponseID = provider.CreatedResponseID(frame) // its owner is recorded before the client reads it
	}
	w.headers(t)
	w.droppedTools(ad)

	// A client that stops reading (a zero TCP window, which keep-alive
	// probes do not detect) would block fasthttp's write of the stream for
	// ever, and with it the upstream connection and the limiter slot. So
	// each frame has t.Timeout to leave; then the server's write fails and
	// the relay ends as for a disconnect. The net.Conn is taken now: it
	// outlives the handler, the RequestCtx may not be touched after it.
	sb := relayBodyPool.Get().(*relayBody)
	*sb = relayBody{t: t, surface: surface, ticket: ticket, resp: resp, dec: dec, src: src, br: br, buf: buf, frame: frame, err: err,
		obs: w.obs, clk: w.clk, start: w.start, res: w.res, laddr: resp.LocalAddr(), client: clientConn(rc),
		guard: w.guard}
	// From here the body owns the ticket, the slot, resp, br, buf and the
	// client watch with the upstream connection it holds bound (the client
	// leaving cuts a silent upstream's read).
	w.pending = false
	w.guard = nil
	sb.dropReader()
	rc.Response.SetBodyStream(sb, -1)
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

// framePool holds frame buffers; an event is a few hundred bytes, and a
// larger one grows its buffer.
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// maxPooledFrame is the largest frame buffer kept for reuse: one huge
// event must not pin megabytes in the pool for good.
const maxPooledFrame = 64 << 10

func putFrame(buf *[]byte) {
	if cap(*buf) <= maxPooledFrame {
		framePool.Put(buf)
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
