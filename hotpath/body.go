package hotpath

import (
	"errors"
	"io"
	"math/bits"
	"net"
	"sync"

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
// next request; larger ones go back to their size class's pool once the
// request is done.
const maxKeptBody = 256 << 10

// errBodyTooLarge reports a body over the limit, however it was sent.
var errBodyTooLarge = errors.New("request body too large")

// bodyBuf is a pooled body buffer. Its capacity is a power of two from
// 1<<minBodyShift to 1<<maxBodyShift when it came from bodyPools.
type bodyBuf struct{ b []byte }

const (
	minBodyShift = 9  // 512 B
	maxBodyShift = 24 // 16 MiB, over the default 10 MiB limit
)

// bodyPools hold body buffers by size class, so a large body reuses the
// buffer of an earlier one instead of growing a new one by doubling (a
// 1 MB body allocated 2 MB and copied 1 MB more that way, every request).
// Unused buffers go with sync.Pool's garbage collection.
var bodyPools [maxBodyShift - minBodyShift + 1]sync.Pool

// getBody returns an empty buffer of capacity at least n from its class's
// pool; when that pool is empty it returns a fresh one if fresh, else nil.
func getBody(n int, fresh bool) *bodyBuf {
	shift := max(bits.Len(uint(n-1)), minBodyShift)
	if shift > maxBodyShift {
		if !fresh {
			return nil
		}
		return &bodyBuf{b: make([]byte, 0, n)}
	}
	if v := bodyPools[shift-minBodyShift].Get(); v != nil {
		bb := v.(*bodyBuf)
		bb.b = bb.b[:0]
		return bb
	}
	if !fresh {
		return nil
	}
	return &bodyBuf{b: make([]byte, 0, 1<<shift)}
}

// putBody hands bb back to its class's pool (one of another size is
// dropped).
func putBody(bb *bodyBuf) {
	c := cap(bb.b)
	shift := bits.Len(uint(c)) - 1
	if c == 1<<shift && shift >= minBodyShift && shift <= maxBodyShift {
		bb.b = bb.b[:0]
		bodyPools[shift-minBodyShift].Put(bb)
	}
}

// readBody returns the request body, reading a streamed one into *bb
// (reused, grown as needed, swapped for a pooled buffer of the right size
// when one is free) and stopping one byte past limit: a body over limit is
// errBodyTooLarge, read no further. Without a stream (fasthttp read the
// body itself, under the limit of the State current when the headers
// arrived) it returns the body fasthttp holds, held to limit all the same:
// the State this request routes on may be newer.
func readBody(rc *fasthttp.RequestCtx, limit int, bb **bodyBuf) ([]byte, error) {
	s := rc.RequestBodyStream()
	if s == nil {
		if b := rc.PostBody(); len(b) <= limit {
			return b, nil
		}
		return nil, errBodyTooLarge
	}
	cl := rc.Request.Header.ContentLength() // -1 chunked
	if cl > limit {
		return nil, errBodyTooLarge // refused before any of it is read
	}
	if *bb == nil {
		*bb = getBody(firstBodySize(cl), true)
	}
	// One byte more than a declared length leaves room to see the end.
	if want := cl + 1; cl >= 0 && cap((*bb).b) < want {
		// A free buffer that holds the whole declared body: take it. Only
		// one already pooled, so a client that declares 10 MiB and sends
		// one byte makes nothing new be reserved.
		if got := getBody(want, false); got != nil {
			putBody(*bb)
			*bb = got
		}
	}
	buf := (*bb).b[:0]
	for {
		if len(buf) == cap(buf) {
			// Grow by doubling as bytes arrive, never past what the
			// limit (or a declared length within it) can need.
			size := max(2*cap(buf), 4<<10)
			if cl >= 0 {
				size = min(size, cl+1)
			}
			grown := getBody(min(size, limit+1), true)
			grown.b = append(grown.b, buf...)
			putBody(*bb)
			*bb = grown
			buf = grown.b
		}
		n, err := s.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		(*bb).b = buf
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

// firstBodySize is the capacity of a scratch's first body buffer: room for
// a declared body under 4 KiB and the byte past it (a chat turn is often a
// few hundred bytes, and every request in flight holds a buffer, as do the
// pooled scratches a burst of requests leaves behind), else 4 KiB.
func firstBodySize(cl int) int {
	if cl >= 0 && cl < 4<<10 {
		return cl + 1
	}
	return 4 << 10
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
		writeError(rc, fasthttp.StatusBadRequest, "cannot read the request body: "+ClassifyReadError(err).Message(),
			upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
	}
	// The rest of the body stays unread: the connection cannot serve
	// another request.
	rc.SetConnectionClose()
}
