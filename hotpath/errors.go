package hotpath

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

const (
	contentTypeJSON = "application/json"
	contentTypeText = "text/plain; charset=utf-8"
)

// writeError answers with status and the error envelope of the request's
// path (see pathSurface): OpenAI's (docs/api.md, Errors), Anthropic's on the messages
// paths (docs/api.md, The Responses API and the Anthropic Messages API). Error paths may allocate; the success path never comes
// here.
func writeError(rc *fasthttp.RequestCtx, status int, message, typ, code string) {
	writeSurfaceError(rc, pathSurface(rc.URI().PathOriginal()), status, message, typ, code)
}

// writeSurfaceError answers with status and surface s's error envelope:
// on messages Anthropic's {"type":"error","error":{"type","message"}}, its
// type from status (typ and code unused); elsewhere OpenAI's with typ and
// code. A caller that knows the request's surface calls this directly.
func writeSurfaceError(rc *fasthttp.RequestCtx, s router.Surface, status int, message, typ, code string) {
	rc.SetStatusCode(status)
	rc.SetContentType(contentTypeJSON)
	rc.SetBody(upstream.AppendSurfaceError(make([]byte, 0, 128+len(message)), s, status, message, typ, code))
}

// pathSurface is the surface whose error envelope answers a request for
// path: messages for /v1/messages and every path under it (count_tokens,
// and unknown ones an Anthropic client may try), chat (OpenAI's envelope)
// for any other.
func pathSurface(path []byte) router.Surface {
	const p = "/v1/messages"
	if len(path) >= len(p) && string(path[:len(p)]) == p && (len(path) == len(p) || path[len(p)] == '/') {
		return router.SurfaceMessages
	}
	return router.SurfaceChat
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
