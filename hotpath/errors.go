package hotpath

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/upstream"
)

const (
	contentTypeJSON = "application/json"
	contentTypeText = "text/plain; charset=utf-8"
)

// writeError answers with status and the OpenAI error envelope (SPEC §5).
// Error paths may allocate; the success path never comes here.
func writeError(rc *fasthttp.RequestCtx, status int, message, typ, code string) {
	rc.SetStatusCode(status)
	rc.SetContentType(contentTypeJSON)
	rc.SetBody(upstream.AppendError(make([]byte, 0, 128+len(message)), message, typ, code))
}

// methodNotAllowed answers 405 with the Allow header.
func methodNotAllowed(rc *fasthttp.RequestCtx, allow string) {
	rc.Response.Header.Set(fasthttp.HeaderAllow, allow)
	writeError(rc, fasthttp.StatusMethodNotAllowed,
		"method "+string(rc.Method())+" is not allowed on "+string(rc.Path())+"; use "+allow,
		upstream.TypeInvalidRequest, upstream.CodeMethodNotAllowed)
}

// writeTooLarge answers 413 request_too_large for a body over limit bytes
// (limit <= 0: the limit is unknown).
func writeTooLarge(rc *fasthttp.RequestCtx, limit int) {
	msg := "request body is too large"
	if limit > 0 {
		msg += "; at most " + strconv.Itoa(limit) + " bytes allowed"
	}
	writeError(rc, fasthttp.StatusRequestEntityTooLarge, msg, upstream.TypeInvalidRequest, upstream.CodeRequestTooLarge)
}

// writeNoConfig answers a request that arrived before any configuration was
// stored. main stores one before it starts serving, so this is a guard, not
// a path a deployment sees.
func writeNoConfig(rc *fasthttp.RequestCtx) {
	writeError(rc, fasthttp.StatusServiceUnavailable, "the gateway has no configuration loaded",
		upstream.TypeUpstream, upstream.CodeUpstreamUnavailable)
}
