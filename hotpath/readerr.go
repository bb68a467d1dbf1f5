package hotpath

import (
	"errors"
	"net"
	"strings"

	"github.com/valyala/fasthttp"
)

// ReadErrorClass names the class of an error fasthttp met while reading a
// request (its request line, a header field, the body framing...). The
// error's own text is never shown to a client or written to a log: fasthttp
// quotes the offending bytes in it, and those may be a client's key.
type ReadErrorClass uint8

const (
	ReadErrorOther       ReadErrorClass = iota // anything else: a malformed request
	ReadErrorRequestLine                       // method, target or version
	ReadErrorHeaderField                       // a field name or value fasthttp refused
	ReadErrorFraming                           // Content-Length / Transfer-Encoding
	ReadErrorHost                              // more than one Host
	ReadErrorHeaderSize                        // the header section is over ReadBufferSize
	ReadErrorBodySize                          // the body is over max_request_bytes
	ReadErrorTimeout                           // the server's ReadTimeout
	ReadErrorConnection                        // the connection failed (reset, closed)
)

// readErrorText is the fixed message of each class; the access and error
// logs name the class by its String.
var readErrorText = [...]struct{ name, msg string }{
	ReadErrorOther:       {"malformed_request", "malformed HTTP request"},
	ReadErrorRequestLine: {"request_line", "malformed HTTP request line"},
	ReadErrorHeaderField: {"header_field", "malformed HTTP header field (a field name with whitespace or a control character, or a value with a control character such as CR, NUL, DEL or ESC)"},
	ReadErrorFraming:     {"framing", "malformed or conflicting Content-Length or Transfer-Encoding"},
	ReadErrorHost:        {"host", "the Host header is sent more than once"},
	ReadErrorHeaderSize:  {"header_size", "request headers are too large"},
	ReadErrorBodySize:    {"body_size", "request body too large"},
	ReadErrorTimeout:     {"timeout", "timed out reading the request"},
	ReadErrorConnection:  {"connection", "connection error while reading the request"},
}

// String is the class's name, for logs.
func (c ReadErrorClass) String() string { return readErrorText[c].name }

// Message is the fixed text a client is answered for the class.
func (c ReadErrorClass) Message() string { return readErrorText[c].msg }

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
