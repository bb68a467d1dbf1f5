package provider

import (
	"github.com/switchyard/switchyard/router"
)

// Error envelopes by surface. Every surface answers gateway-made errors in
// OpenAI's envelope except messages, whose clients (the Anthropic SDKs,
// Claude Code) only understand Anthropic's (docs/api.md, The Responses API and the Anthropic Messages API).

// Anthropic error types (docs/api.md, The Responses API and the Anthropic Messages API).
const (
	AnthropicInvalidRequest = "invalid_request_error"
	AnthropicAuthentication = "authentication_error"
	AnthropicPermission     = "permission_error"
	AnthropicNotFound       = "not_found_error"
	AnthropicRateLimit      = "rate_limit_error"
	AnthropicAPI            = "api_error"
	AnthropicOverloaded     = "overloaded_error"
)

// AnthropicErrorType is the Anthropic error type of a gateway answer with
// HTTP status: 400/413 (and other 4xx) invalid_request_error, 401
// authentication_error, 403 permission_error, 404 not_found_error, 429
// rate_limit_error, 503 overloaded_error, any other status api_error.
func AnthropicErrorType(status int) string {
	switch {
	case status == 401:
		return AnthropicAuthentication
	case status == 403:
		return AnthropicPermission
	case status == 404:
		return AnthropicNotFound
	case status == 429:
		return AnthropicRateLimit
	case status == 503:
		return AnthropicOverloaded
	case status >= 400 && status < 500:
		return AnthropicInvalidRequest
	}
	return AnthropicAPI
}

// AppendAnthropicError appends Anthropic's error envelope
// {"type":"error","error":{"type":…,"message":…}} to dst.
func AppendAnthropicError(dst []byte, typ, message string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = AppendJSONString(dst, typ)
	dst = append(dst, `,"message":`...)
	dst = AppendJSONString(dst, message)
	return append(dst, "}}"...)
}

// AppendSurfaceError appends the error envelope of surface s for a gateway
// answer with HTTP status: Anthropic's on messages (its type from status),
// OpenAI's with typ and code elsewhere.
func AppendSurfaceError(dst []byte, s router.Surface, status int, message, typ, code string) []byte {
	if s == router.SurfaceMessages {
		return AppendAnthropicError(dst, AnthropicErrorType(status), message)
	}
	return AppendError(dst, message, typ, code)
}

// namedEvents reports whether surface s streams named SSE events that end
// without [DONE] (the Responses and Messages APIs).
func namedEvents(s router.Surface) bool {
	return s == router.SurfaceResponses || s == router.SurfaceMessages
}

// AppendErrorFrame appends the SSE frame that ends a committed stream of
// surface s with envelope (the surface's): "data: {envelope}" on chat and
// completions; "event: error" + "data: {envelope}" on messages
// (Anthropic's error event); "event: error" + the Responses API's error
// event carrying the OpenAI envelope too on responses (see
// responsesErrorEvent).
func AppendErrorFrame(dst []byte, s router.Surface, envelope []byte) []byte {
	if namedEvents(s) {
		dst = append(dst, "event: error\n"...)
	}
	if s == router.SurfaceResponses {
		envelope = responsesErrorEvent(envelope)
	}
	dst = append(dst, "data: "...)
	dst = append(dst, envelope...)
	return append(dst, "\n\n"...)
}

// responsesErrorEvent turns the OpenAI envelope {"error":{…}} into the
// data of a Responses API error event, {"type":"error","code","message",
// "param"}, keeping the "error" object (docs/routing.md, 6's frame, on which the
// OpenAI SDKs raise an error) beside them. An envelope that does not parse
// is returned unchanged.
func responsesErrorEvent(envelope []byte) []byte {
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(envelope)
	if err != nil || len(envelope) < 2 || envelope[0] != '{' {
		return envelope
	}
	msg, _ := jsonStr(v.Get("error", "message"))
	code, _ := jsonStr(v.Get("error", "code"))
	out := append(make([]byte, 0, 2*len(envelope)), `{"type":"error","code":`...)
	out = AppendJSONString(out, code)
	out = append(out, `,"message":`...)
	out = AppendJSONString(out, msg)
	out = append(out, `,"param":null,`...)
	return append(out, envelope[1:]...)
}
