package hotpath

import (
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// maxClientRequestID bounds an echoed X-Request-Id. A longer or empty value
// is replaced by a generated one rather than copied into every log line.
const maxClientRequestID = 128

// validClientRequestID reports whether a client's X-Request-Id may be echoed
// and forwarded as is: 1 to maxClientRequestID bytes of visible ASCII
// (0x21-0x7E). Anything else (control bytes such as CR, LF or ESC, spaces,
// non-ASCII) is replaced by a generated id, so the value is safe in a
// response header, an upstream request header and a console log line.
func validClientRequestID(id []byte) bool {
	if len(id) == 0 || len(id) > maxClientRequestID {
		return false
	}
	for _, c := range id {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// requestIDPrefix is 12 random hex digits drawn once per process, so ids
// from two gateway processes (or two restarts) do not collide.
var requestIDPrefix = func() [12]byte {
	var raw [6]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails on supported platforms
	var p [12]byte
	hex.Encode(p[:], raw[:])
	return p
}()

// requestIDSeq numbers generated ids within the process.
var requestIDSeq atomic.Uint64

// requestIDLen is the length of a generated id: "<process prefix>-<16 hex
// digits of a counter>".
const requestIDLen = 12 + 1 + 16

// setRequestID sets X-Request-Id on rc's response: the request's own when
// it is valid (validClientRequestID), else a generated one. For the answers
// written outside Handler (fasthttp's read errors, an Expect refusal);
// Handler uses head.setRequestID, from the header section it scanned.
func setRequestID(rc *fasthttp.RequestCtx) {
	var buf [requestIDLen]byte
	putRequestID(rc, rc.Request.Header.PeekBytes(headerRequestIDBytes), &buf)
}

// putRequestID sets X-Request-Id on rc's response to client (the id the
// request came with, nil: none) when it is valid, else to an id generated
// into buf, and returns the id set. The request itself is not touched:
// what the walk forwards (Call.RequestID) and what the access log records
// is this id. Generation is a counter increment; it allocates nothing.
func putRequestID(rc *fasthttp.RequestCtx, client []byte, buf *[requestIDLen]byte) []byte {
	if validClientRequestID(client) {
		rc.Response.Header.SetCanonical(headerRequestIDBytes, client)
		return client
	}
	copy(buf[:12], requestIDPrefix[:])
	buf[12] = '-'
	n := requestIDSeq.Add(1)
	for i := len(buf) - 1; i > 12; i-- {
		buf[i] = hexDigits[n&0xf]
		n >>= 4
	}
	rc.Response.Header.SetCanonical(headerRequestIDBytes, buf[:])
	return buf[:]
}

// headerRequestIDBytes is headerRequestID, already in the canonical form
// fasthttp stores header names in, so setting it skips normalizing the name.
var headerRequestIDBytes = []byte(headerRequestID)

const hexDigits = "0123456789abcdef"
