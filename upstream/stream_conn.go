package upstream

import (
	"io"

	"github.com/valyala/fasthttp"
)

// streamConn is the upstream connection under a streamed answer, from the
// request's write (roundTripGuarded) until the walk or the relay closes the
// body stream (callGuard.closeStream). Bound to the callGuard all along, so
// a departed client cuts the header wait and the relay alike. Owned by the
// guard's owner (the walk, then the stream writer); one goroutine at a time.
//
// It is also the body's reader: it reads resp's network-backed stream and
// notes whether the body was read to its end, which decides whether the
// connection may be pooled (an unread rest would be the next answer).
type streamConn struct {
	hc   *fasthttp.HostClient
	cc   heldConn
	rd   answerReader
	tc   *trackedConn
	body io.Reader
	// closeConn: the request asked Connection: close.
	closeConn bool
	// eof: the body was read to its end; failed: a read of it failed.
	eof, failed bool
}

// Read reads the body and notes its end.
func (s *streamConn) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	switch {
	case err == io.EOF:
		s.eof = true
	case err != nil:
		s.failed = true
	}
	return n, err
}

// holdStream keeps the connection of a streamed answer whose headers were
// read (resp's body stream reads rd) until closeStream.
func (g *callGuard) holdStream(hc *fasthttp.HostClient, cc heldConn, rd answerReader, tc *trackedConn, req *fasthttp.Request, resp *fasthttp.Response) {
	g.stream = streamConn{hc: hc, cc: cc, rd: rd, tc: tc, body: resp.BodyStream(), closeConn: req.ConnectionClose(),
		eof: resp.Header.ContentLength() == 0}
}

// body returns the reader of resp's streamed body (nil for none): the held
// stream, which notes the body's end, else resp's own.
func (g *callGuard) body(resp *fasthttp.Response) io.Reader {
	if g.stream.hc != nil {
		return &g.stream
	}
	return resp.BodyStream()
}

// awaitBody returns once the held stream's connection has a byte to read
// or its read fails, so a stream waiting for its next event holds no
// buffer of its own meanwhile. The failure is left to the body's next read,
// which meets it again: deadlines, closes and ends persist on a connection.
// Without a held stream, or with bytes already buffered, it returns at once.
func (g *callGuard) awaitBody() {
	s := &g.stream
	if s.hc != nil && !s.eof && !s.failed && s.rd.br.Buffered() == 0 {
		s.rd.br.Peek(1) //nolint:errcheck // see above
	}
}

// closeStream closes resp's body stream and gives its connection back: to
// the pool only when the body was read to its end, the guard still owns the
// connection (a departed client's was closed), neither side asked
// Connection: close and nothing unsolicited is left behind the answer;
// else it is closed. Every end of a streamed answer goes through here.
func (g *callGuard) closeStream(resp *fasthttp.Response) {
	resp.CloseBodyStream() //nolint:errcheck // fasthttp's network-backed stream: only released
	s := &g.stream
	if s.hc == nil {
		return
	}
	kept := g.unbind(s.tc)
	putConn(s.hc, s.cc, s.rd, s.tc, kept && s.eof && !s.failed && !s.closeConn && !resp.ConnectionClose())
	*s = streamConn{}
}

// dropStream closes a held connection nobody closed (a panic between the
// call and closeStream; resp, released by then, took its body stream).
func (g *callGuard) dropStream() {
	if s := &g.stream; s.hc != nil {
		g.unbind(s.tc)
		putConn(s.hc, s.cc, s.rd, s.tc, false)
		*s = streamConn{}
	}
}

// putConn ends a call on cc, whose answer was read: cc goes back to hc's
// pool when reusable and nothing the upstream sent is left behind the
// answer, else it is closed (the leftover counted).
func putConn(hc *fasthttp.HostClient, cc heldConn, rd answerReader, tc *trackedConn, reusable bool) {
	if reusable {
		r := discardNone
		if rd.buffered() > 0 {
			// Read in with the answer's last bytes, and nobody's: fasthttp
			// would drop them silently when the reader is reused.
			r = discardUnsolicited
		} else {
			r = tlsLeftover(cc.Conn(), tc)
		}
		if r != discardNone {
			if tc != nil {
				tc.stats.add(r)
			}
			reusable = false
		}
	}
	rd.release(hc)
	if reusable {
		giveBack((*fasthttp.HostClient).ReleaseConn, hc, cc)
	} else {
		giveBack((*fasthttp.HostClient).CloseConn, hc, cc)
	}
}
