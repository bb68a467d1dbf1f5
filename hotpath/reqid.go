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

// setRequestID echoes the client's X-Request-Id on the response, or
// generates one and sets it on the request as well: "<process prefix>-<16 hex digits of a counter>". Generation
// is a counter increment and a stack buffer; it allocates nothing.
func setRequestID(rc *fasthttp.RequestCtx) {
	if id := rc.Request.Header.Peek(headerRequestID); len(id) > 0 && len(id) <= maxClientRequestID {
		rc.Response.Header.SetBytesV(headerRequestID, id)
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
	rc.Response.Header.SetBytesV(headerRequestID, buf[:])
	// The request carries the id too, so everything after this point (the
	// walk, the access log) sees one id whichever way it looks.
	rc.Request.Header.SetBytesV(headerRequestID, buf[:])
}

const hexDigits = "0123456789abcdef"
