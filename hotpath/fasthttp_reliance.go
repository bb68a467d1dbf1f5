package hotpath

// What the server side relies on inside fasthttp, kept in this one file
// and pinned by fasthttp_reliance_test.go, so that an upgrade that changes
// it fails a test instead of silently switching off a safety check:
//
//   - Server.HeaderReceived runs once the header section is in and before
//     any of the body is read, in both body modes, and the body read then
//     follows the header's ContentLength: refuseBodyEarly declares a
//     refused request's body empty so nothing of it is awaited.
//   - The errors fasthttp's server meets while reading a request: some are
//     sentinels, the rest fmt.Errorf texts with fixed parts, which
//     ClassifyReadError reads (and never repeats: they quote request bytes).

import (
	"bytes"
	"errors"
	"net"
	"strings"

	"github.com/valyala/fasthttp"
)

// refuseBodyEarly makes fasthttp skip the body of an API request whose
// client key checkKey refuses: it declares the body empty and the
// connection to be closed after the answer (the body's bytes, unread, end
// nowhere known). The handler then refuses the request from its head as
// always (it checks the key again: HeaderReceived cannot hand it a result),
// without waiting for a byte of body, in either body mode
// (server.reduce_memory_usage too). A request sent with "Expect:
// 100-continue" is refused by expectContinue before that.
func refuseBodyEarly(hdr *fasthttp.RequestHeader, st *State) {
	uri := hdr.RequestURI()
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	if r := routeOf(uri); r != routeBatch {
		if _, ok := r.surface(); !ok {
			return
		}
	}
	h := headPool.Get().(*head)
	h.scan(hdr)
	if _, verdict := checkKey(st, h); verdict != keyOK {
		hdr.SetContentLength(0)
		hdr.SetConnectionClose()
	}
	putHead(h)
}

// ClassifyReadError returns the class of err, an error fasthttp's server
// met while reading a request (the ErrorHandler's, or the one it logs as
// "error when serving connection"). See fasthttp_reliance.go for what it
// relies on in fasthttp's errors.
func ClassifyReadError(err error) ReadErrorClass {
	var small *fasthttp.ErrSmallBuffer
	var netErr net.Error
	switch {
	case err == nil:
		return ReadErrorOther
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return ReadErrorBodySize
	case errors.As(err, &small), errors.Is(err, fasthttp.ErrSmallReadBuffer):
		return ReadErrorHeaderSize
	case errors.As(err, &netErr) && netErr.Timeout():
		return ReadErrorTimeout
	case errors.Is(err, fasthttp.ErrMissingRequestMethod), errors.Is(err, fasthttp.ErrUnsupportedRequestMethod),
		errors.Is(err, fasthttp.ErrExtraWhitespaceInRequestLine), errors.Is(err, fasthttp.ErrEmptyRequestURI):
		return ReadErrorRequestLine
	case errors.Is(err, fasthttp.ErrDuplicateContentLength), errors.Is(err, fasthttp.ErrUnsupportedTransferEncoding),
		errors.Is(err, fasthttp.ErrNonNumericChars):
		return ReadErrorFraming
	}
	// fasthttp builds the rest with fmt.Errorf and no sentinel: classified
	// by their fixed parts, never repeated.
	s := err.Error()
	switch {
	case strings.Contains(s, "invalid header key"), strings.Contains(s, "invalid header value"),
		strings.Contains(s, "malformed mime header line"):
		return ReadErrorHeaderField
	case strings.Contains(s, "too many host headers"):
		return ReadErrorHost
	case strings.Contains(s, "transfer-encoding"), strings.Contains(s, "content-length"):
		return ReadErrorFraming
	case strings.Contains(s, "request uri"), strings.Contains(s, "http version"),
		strings.Contains(s, "first line of request"), strings.Contains(s, "request method"):
		return ReadErrorRequestLine
	case errors.As(err, &netErr), strings.Contains(s, "reset by peer"), strings.Contains(s, "broken pipe"):
		return ReadErrorConnection
	}
	return ReadErrorOther
}
