package hotpath

import (
	"errors"
	"io"
	"net"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/upstream"
)

// The request body.
//
// fasthttp, reading a body itself, reserves the whole declared
// Content-Length (rounded up to a power of two) as soon as the headers are
// in: 200 connections that each declare 10 MiB and send one byte made a
// gateway's RSS 3.3 GB. So the server streams request bodies
// (NewServer's StreamRequestBody; fasthttp pre-reads at most 8 KiB) and
// readBody reads them into a buffer that grows only as bytes arrive, up to
// the limit. With server.reduce_memory_usage fasthttp cannot stream bodies
// and still release each connection's read buffer between requests, so
// that mode keeps fasthttp's own reading (see NewServer).

// maxKeptBody is the largest body buffer a pooled scratch keeps for the
// next request; larger ones are dropped once the request is done.
const maxKeptBody = 256 << 10

// errBodyTooLarge reports a body over the limit, however it was sent.
var errBodyTooLarge = errors.New("request body too large")

// readBody returns the request body, reading a streamed one into buf
// (reused from buf[:0], grown as needed) and stopping one byte past limit:
// a body over limit is errBodyTooLarge, read no further. Without a stream
// (fasthttp read the body itself, under the limit of the State current when
// the headers arrived) it returns the body fasthttp holds, held to limit
// all the same: the State this request routes on may be newer.
func readBody(rc *fasthttp.RequestCtx, limit int, buf []byte) ([]byte, error) {
	s := rc.RequestBodyStream()
	if s == nil {
		if b := rc.PostBody(); len(b) <= limit {
			return b, nil
		}
		return buf[:0], errBodyTooLarge
	}
	cl := rc.Request.Header.ContentLength() // -1 chunked
	if cl > limit {
		return buf[:0], errBodyTooLarge // refused before any of it is read
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			// Grow by doubling as bytes arrive, never past what the
			// limit (or a declared length within it) can need; one byte
			// more leaves room to see the end or an excess.
			size := max(2*cap(buf), 4<<10)
			if cl >= 0 {
				size = min(size, cl+1)
			}
			grown := make([]byte, len(buf), min(size, limit+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := s.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return buf, errBodyTooLarge
		}
		if err == io.EOF {
			if cl >= 0 && len(buf) < cl {
				// fasthttp's stream ends quietly when the client stops
				// short of its Content-Length: not a whole body.
				return buf, io.ErrUnexpectedEOF
			}
			return buf, nil
		}
		if err != nil {
			if errors.Is(err, fasthttp.ErrBodyTooLarge) {
				return buf, errBodyTooLarge
			}
			return buf, err
		}
	}
}

// writeBodyError answers a body that could not be read: 413 over the
// limit, 408 when the client was too slow (the server's ReadTimeout), else
// 400.
func writeBodyError(rc *fasthttp.RequestCtx, err error, limit int) {
	var ne net.Error
	switch {
	case errors.Is(err, errBodyTooLarge):
		writeTooLarge(rc, limit)
	case errors.As(err, &ne) && ne.Timeout():
		writeReadTimeout(rc)
	default:
		writeError(rc, fasthttp.StatusBadRequest, "cannot read the request body: "+err.Error(),
			upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
	}
	// The rest of the body stays unread: the connection cannot serve
	// another request.
	rc.SetConnectionClose()
}
