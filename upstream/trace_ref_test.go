package upstream

import "github.com/valyala/fasthttp"

// traceContext is how the walk found the trace context before the hot path
// read it in its one pass over the header section (Call.TraceParent and
// TraceState): through fasthttp's view of h. Tests that build a request's
// headers in code fill their Call with it.
func traceContext(h *fasthttp.RequestHeader) (parent, state []byte) {
	return TraceContext(onlyValue(h, headerTraceparentName), onlyValue(h, headerTracestateName))
}

// withTrace sets call's trace context from h, as the hot path does from the
// header section, and returns call.
func withTrace(call *Call, h *fasthttp.RequestHeader) *Call {
	call.TraceParent, call.TraceState = traceContext(h)
	return call
}
