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

// setRequestID echoes the client's X-Request-Id on the response when it is
// valid (validClientRequestID), or generates one and sets it on the request
// as well: "<process prefix>-<16 hex digits of a counter>". Generation is a
// counter increment and a stack buffer; it allocates nothing.
func setRequestID(rc *fasthttp.RequestCtx) {
	if id := rc.Request.Header.PeekBytes(headerRequestIDBytes); validClientRequestID(id) {
		rc.Response.Header.SetCanonical(headerRequestIDBytes, id)
		return
	}
	var buf [12 + 1 + 16]byte
	copy(buf[:12], requestIDPrefix[:])
	buf[12] = '-'
	n := requestIDSeq.Add(1)
	for i := len(buf) - 1; i > 12; i-- {
		buf[i] = hexDigits[n&0xf]
		n >>= 4
	}
	rc.Response.Header.SetCanonical(headerRequestIDBytes, buf[:])
	// The request carries the id too, so everything after this point (the
	// walk, the access log) sees one id whichever way it looks.
	rc.Request.Header.SetCanonical(headerRequestIDBytes, buf[:])
}

// headerRequestIDBytes is headerRequestID, already in the canonical form
// fasthttp stores header names in, so setting it skips normalizing the name.
var headerRequestIDBytes = []byte(headerRequestID)

const hexDigits = "0123456789abcdef"
