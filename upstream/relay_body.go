package upstream

import (
	"bufio"
	"io"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/router"
)

// relayBody is a committed stream's response body. fasthttp's server
// writes it with WriteTo on the connection's own goroutine, each Write a
// flushed chunk (fasthttp.BodyWriterTo), so a stream costs no goroutine,
// pipe or write buffer of its own (SetBodyStreamWriter's way); Read serves
// any other reader. fasthttp calls Close once the answer is written or
// abandoned: it releases the upstream response, the limiter slot and the
// breaker ticket, and reports the end. Between events a stream holds no
// read or frame buffer: it waits on the upstream connection's own reader,
// takes both from their pools when bytes arrive, and gives them back once
// the event is written (WriteTo) and nothing of it is left buffered.
//
// Not safe for concurrent use: fasthttp reads and closes it from one
// goroutine.
type relayBody struct {
	t       *Target
	surface router.Surface
	ticket  Ticket
	resp    *fasthttp.Response
	dec     StreamDecoder
	// src is the upstream body the decoder reads through br; br and buf
	// are nil while no event is in hand (see takeReader, takeFrame).
	src io.Reader
	br  *bufio.Reader
	buf *[]byte
	// frame and err are the decoder's latest event and error, not yet
	// relayed.
	frame []byte
	err   error

	obs    Observer
	clk    *clock
	start  time.Time
	res    Result
	laddr  net.Addr
	client net.Conn
	// guard is the walk's client watch; it holds the upstream connection,
	// bound, until the stream ends (closeStream).
	guard *callGuard

	// readBy and writeBy are the deadlines last armed on the upstream's
	// read and the client's write.
	readBy, writeBy time.Time
	// class is the outcome so far; ClassCanceled until the relay ends.
	class, breakerClass Class
	relayed, ended      bool
	// pending is what Read has yet to hand out of frame.
	pending []byte
}

var relayBodyPool = sync.Pool{New: func() any { return new(relayBody) }}

// SupportsBodyWriteTo implements fasthttp.BodyWriterTo: WriteTo writes
// exactly what Read would.
func (s *relayBody) SupportsBodyWriteTo() bool { return true }

// WriteTo relays every event to w, one Write each, and returns the bytes
// written; a failed Write (the client gone or stalled) ends it as canceled.
func (s *relayBody) WriteTo(w io.Writer) (n int64, err error) {
	for !s.ended {
		frame := s.next()
		if len(frame) == 0 {
			continue
		}
		k, werr := w.Write(frame)
		n += int64(k)
		if werr != nil {
			s.finish(ClassCanceled)
			s.release()
			return n, werr
		}
		s.dropFrame() // written and flushed: not needed until the next event
	}
	s.release()
	return n, nil
}

// Read implements io.Reader over the same frames.
func (s *relayBody) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		if s.ended {
			s.release()
			return 0, io.EOF
		}
		s.pending = s.next()
	}
	k := copy(p, s.pending)
	s.pending = s.pending[k:]
	return k, nil
}

// next returns the bytes to write next (the latest event, the terminal
// error frame, or nothing), and reads the following event when the stream
// goes on. A panic in the decoder (a bug on odd upstream bytes) is
// recovered: the stream ends with an internal_error frame, as the gateway's
// fault, neutral for the breaker.
func (s *relayBody) next() (out []byte) {
	defer func() {
		if v := recover(); v != nil {
			reportPanic(s.obs, v)
			s.finish(ClassTransport)
			s.breakerClass = ClassCanceled
			out = provider.AppendErrorFrame(s.takeFrame(), s.surface, internalErrorEnvelope(s.surface))
			*s.buf = out[:0]
		}
	}()
	s.armWrite()
	if !s.relayed {
		// The first event, read before the commit.
		s.relayed = true
	} else {
		s.armRead()
		br := s.takeReader()
		s.frame, s.err = s.dec.Next(s.takeFrame(), br)
		s.dropReader()
		// The read may have taken up to its own deadline (an upstream
		// sending only comments), past the write deadline armed above:
		// re-arm it, so the event or the error frame, and the body's end,
		// still reach the client.
		s.armWrite()
	}
	// Every byte written passes t.redact (the target's own credential
	// never reaches the client, even when an upstream echoes it).
	s.frame = s.t.redact(s.frame)
	*s.buf = s.frame[:0]
	switch {
	case s.err == nil:
		return s.frame
	case s.err == io.EOF:
		s.finish(ClassOK)
		return s.frame
	}
	o := streamFailure(s.err, s.surface)
	s.finish(o.class)
	if o.framed {
		// The upstream's own error event, already in the frame.
		return s.frame
	}
	s.frame = provider.AppendErrorFrame(s.frame, s.surface, s.t.redact(o.envelope))
	*s.buf = s.frame[:0]
	return s.frame
}

// takeReader returns the decoder's reader, taking one from the pool once
// the upstream has bytes to read (or its read fails: the decoder's own
// read then meets the same deadline, close or end) when none is held.
func (s *relayBody) takeReader() *bufio.Reader {
	if s.br == nil {
		s.guard.awaitBody()
		s.br = readerPool.Get().(*bufio.Reader)
		s.br.Reset(s.src)
	}
	return s.br
}

// dropReader gives the decoder's reader back when it holds nothing unread.
func (s *relayBody) dropReader() {
	if s.br != nil && s.br.Buffered() == 0 {
		s.br.Reset(nil)
		readerPool.Put(s.br)
		s.br = nil
	}
}

// takeFrame returns an empty frame buffer, taking one from the pool when
// none is held.
func (s *relayBody) takeFrame() []byte {
	if s.buf == nil {
		s.buf = framePool.Get().(*[]byte)
	}
	return (*s.buf)[:0]
}

// dropFrame gives the frame buffer back; the frame must be written already.
func (s *relayBody) dropFrame() {
	if s.buf != nil {
		putFrame(s.buf)
		s.buf, s.frame = nil, nil
	}
}

// finish records the relay's outcome once.
func (s *relayBody) finish(c Class) {
	if !s.ended {
		s.ended = true
		s.class, s.breakerClass = c, c
	}
}

// Deadlines are re-armed only once a quarter of their span is used, and
// then for a span and a quarter, so each bound stays between the target
// timeout and 1.25 times it without a system call per event (re-arming on
// every event was ~6% of a stream's CPU).
func (s *relayBody) armRead() {
	// Between events the silence is bounded by the target timeout.
	if now := s.clk.now(); s.readBy.Sub(now) < s.t.Timeout {
		s.readBy = now.Add(s.t.Timeout + s.t.Timeout/4)
		setStreamDeadline(s.laddr, s.readBy)
	}
}

func (s *relayBody) armWrite() {
	if s.client == nil {
		return
	}
	if now := time.Now(); s.writeBy.Sub(now) < s.t.Timeout {
		s.writeBy = now.Add(s.t.Timeout + s.t.Timeout/4)
		s.client.SetWriteDeadline(s.writeBy) //nolint:errcheck
	}
}

// Close implements io.Closer: fasthttp is done with the body, written or
// not. A body closed before its end is a client gone away.
func (s *relayBody) Close() error {
	s.finish(ClassCanceled)
	s.release()
	*s = relayBody{}
	relayBodyPool.Put(s)
	return nil
}

// release ends the stream once its last frame is out (or it was cut):
// everything but the relayBody itself, which fasthttp holds until Close.
func (s *relayBody) release() {
	if s.t == nil {
		return // released already
	}
	if s.guard.Gone() {
		// The client left: whatever the relay saw after its upstream
		// connection was closed is no upstream failure.
		s.class, s.breakerClass = ClassCanceled, ClassCanceled
	}
	if s.class == ClassOK {
		// After [DONE] only the body's terminating chunk should be left:
		// read it (briefly) so the connection goes back to the pool.
		setStreamDeadline(s.laddr, s.clk.now().Add(drainTimeout))
		// br.Discard reads like io.Copy to io.Discard through a
		// LimitReader (until EOF, an error or maxDrain bytes) but without
		// allocating the LimitReader.
		s.takeReader().Discard(maxDrain) //nolint:errcheck
	}
	if s.client != nil {
		// fasthttp still has to write the body's last chunk after this:
		// bound that too. The deadline stays behind on the keep-alive
		// connection; the server arms a fresh one before each response it
		// writes (hotpath's Server.WriteTimeout), so it cannot cut the next
		// answer short.
		s.client.SetWriteDeadline(time.Now().Add(s.t.Timeout)) //nolint:errcheck
	}
	// Closing an unfinished body stream closes the connection, which is
	// how a client disconnect cancels the upstream request; a finished one
	// goes back to the pool unless something unsolicited follows it.
	s.guard.closeStream(s.resp)
	fasthttp.ReleaseResponse(s.resp)
	if s.br != nil {
		s.br.Reset(nil)
		readerPool.Put(s.br)
	}
	s.dropFrame()
	s.guard.release()
	end := s.clk.now()
	s.t.Breaker().Done(s.ticket, s.breakerClass, end)
	s.t.Limiter().Release()
	res, obs, took := s.res, s.obs, end.Sub(s.start)
	res.Class = s.class
	if ur, ok := s.dec.(provider.UsageReporter); ok && s.class == ClassOK {
		res.Usage = ur.Usage()
	}
	if ir, ok := s.dec.(provider.ItemReporter); ok && s.class == ClassOK {
		res.ItemIDs = ir.OutputItemIDs()
	}
	provider.ReleaseDecoder(s.dec)
	class := s.class
	*s = relayBody{ended: true, class: class}
	// The observer's own bug must not crash the process either.
	defer func() {
		if v := recover(); v != nil {
			reportPanic(obs, v)
		}
	}()
	obs.StreamEnd(res, took)
}
