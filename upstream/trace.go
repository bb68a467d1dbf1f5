package upstream

import "github.com/valyala/fasthttp"

// W3C Trace Context (https://www.w3.org/TR/trace-context/): the client's
// traceparent and tracestate are the only client headers besides
// X-Request-Id that reach an upstream, so a trace spans the gateway.
const (
	headerTraceparentName = "traceparent"
	headerTracestateName  = "tracestate"
	// maxTraceparent bounds a future-version traceparent (version 00 is 55
	// bytes); maxTracestate is the length the spec requires to propagate.
	maxTraceparent = 256
	maxTracestate  = 512
)

var (
	headerTraceparent = []byte("Traceparent")
	headerTracestate  = []byte("Tracestate")
)

// TraceContext returns the trace headers to forward from the client's
// traceparent and tracestate values, each as it came when its header came
// exactly once (nil otherwise: see onlyValue), aliasing them: the
// traceparent when it is valid, and with it the tracestate when that is
// well-formed. A malformed or repeated traceparent forwards neither (the
// spec: without a valid traceparent, tracestate means nothing); a repeated
// or malformed tracestate is dropped. The hot path reads both values in its
// one pass over the header section and puts the result in Call.
func TraceContext(parent, state []byte) (fwdParent, fwdState []byte) {
	if !validTraceparent(parent) {
		return nil, nil
	}
	if !validTracestate(state) {
		state = nil
	}
	return parent, state
}

// TraceID returns the trace id (32 lowercase hex digits) of the request's
// traceparent when TraceContext would forward it, else nil. It aliases h.
// It reads fasthttp's view of the headers (a request refused before the
// hot path read its header section, for its access log line).
func TraceID(h *fasthttp.RequestHeader) []byte {
	return TraceIDOf(onlyValue(h, headerTraceparentName))
}

// TraceIDOf returns the trace id of traceparent when it is valid, else nil,
// aliasing it.
func TraceIDOf(traceparent []byte) []byte {
	if !validTraceparent(traceparent) {
		return nil
	}
	return traceparent[3:35]
}

// onlyValue returns the value of the header key when it occurs exactly
// once, else nil.
func onlyValue(h *fasthttp.RequestHeader, key string) []byte {
	all := h.PeekAll(key)
	if len(all) != 1 {
		return nil
	}
	return all[0]
}

// validTraceparent checks version-traceid-parentid-flags: lowercase hex
// fields of 2, 32, 16 and 2 digits, version not ff, ids not all zero;
// version 00 is exactly 55 bytes, a later version may continue after a '-'.
func validTraceparent(b []byte) bool {
	if len(b) < 55 || len(b) > maxTraceparent {
		return false
	}
	if !lowerHex(b[0:2]) || (b[0] == 'f' && b[1] == 'f') || b[2] != '-' ||
		!lowerHex(b[3:35]) || allZero(b[3:35]) || b[35] != '-' ||
		!lowerHex(b[36:52]) || allZero(b[36:52]) || b[52] != '-' || !lowerHex(b[53:55]) {
		return false
	}
	if len(b) == 55 {
		return true
	}
	if (b[0] == '0' && b[1] == '0') || b[55] != '-' {
		return false
	}
	for _, c := range b[56:] {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// validTracestate accepts a non-empty value of at most maxTracestate
// printable ASCII bytes (the list's inner grammar is the tracing vendors').
func validTracestate(b []byte) bool {
	if len(b) == 0 || len(b) > maxTracestate {
		return false
	}
	for _, c := range b {
		if c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

func lowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != '0' {
			return false
		}
	}
	return true
}
