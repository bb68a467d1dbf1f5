package provider

import (
	"time"

	"bufio"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

// Class classifies the outcome of one attempt (docs/routing.md, 5 and 7).
type Class uint8

// Classes. The zero value is ClassOK.
const (
	// ClassOK is a 2xx answer (for a stream: the upstream stream ended cleanly).
	ClassOK Class = iota
	// ClassTransport is a connection or protocol failure: failover-safe,
	// retried, counted by the breaker.
	ClassTransport
	// ClassTimeout is an attempt or request timeout: failover-safe, counted.
	ClassTimeout
	// ClassServer is 408 or 5xx: failover-safe, counted.
	ClassServer
	// ClassRateLimited is a 429: failover-safe, parks the target, not counted.
	ClassRateLimited
	// ClassContextLength is a provider-reported context-length overflow:
	// failover-safe, not retried on the same member, not counted.
	ClassContextLength
	// ClassAuth is 401/403: returned to the client at once as 502.
	ClassAuth
	// ClassClient is any other 4xx: returned to the client at once.
	ClassClient
	// ClassCanceled means the client went away: not counted, no failover.
	ClassCanceled
	// ClassCircuitOpen means the member was skipped: its breaker is open.
	ClassCircuitOpen
	// ClassParked means the member was skipped: parked after a 429.
	ClassParked
	// ClassSaturated means the member's concurrency queue was full.
	ClassSaturated
	// ClassQuota means the member was skipped: no room in its own limits
	// (docs/quotas.md).
	ClassQuota
)

var classNames = [...]string{"ok", "transport", "timeout", "server", "rate_limited",
	"context_length", "auth", "client", "canceled", "circuit_open", "parked", "saturated", "quota"}

// String returns the class name used in metrics and logs.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

// Failover reports whether the walk may move to the next member after c.
func (c Class) Failover() bool {
	switch c {
	case ClassTransport, ClassTimeout, ClassServer, ClassRateLimited,
		ClassContextLength, ClassCircuitOpen, ClassParked, ClassSaturated, ClassQuota:
		return true
	}
	return false
}

// Counted reports whether the circuit breaker counts c as a failure.
func (c Class) Counted() bool {
	return c == ClassTransport || c == ClassTimeout || c == ClassServer
}

// Endpoint is where and how to reach one target. Immutable; the credential
// fields are secrets and must never be logged.
type Endpoint struct {
	// BaseURL is the target's base URL without a trailing slash, e.g.
	// "https://api.openai.com/v1" or "https://api.anthropic.com".
	BaseURL string
	// APIKey is the provider key ("" = none sent).
	APIKey string
	// Region and the AWS credentials are used by the bedrock adapter only.
	Region             string
	AWSAccessKeyID     string
	AWSSecretAccessKey string
	AWSSessionToken    string
	// APIVersion is azure's azure_api_version: classic deployment URLs when
	// set, the v1 API when "".
	APIVersion string
	// Project is vertex's Google Cloud project.
	Project string
	// AnthropicBetas are the anthropic-beta flags a bedrock or vertex
	// target passes to Claude on the messages surface; nil = the provider's
	// default (BedrockAnthropicBetas, VertexAnthropicBetas), empty = none.
	AnthropicBetas []string
	// Token supplies an OAuth 2.0 access token (azure with Entra ID client
	// credentials, vertex); nil = none.
	Token *TokenSource
	// uris holds the adapter's fixed request URIs, parsed once, and bearer
	// "Bearer <APIKey>" (see Prepare); nil in an Endpoint built by hand:
	// built per attempt.
	uris   endpointURIs
	bearer []byte
}

// Call describes one proxied request; every attempt of a walk shares it.
type Call struct {
	Surface router.Surface
	Stream  bool
	// Body is the client's raw request body. Borrowed from the server's
	// request: adapters must not retain it past the request.
	Body []byte
	// Model is the model id the client asked for.
	Model []byte
	// CountTokens is set on the messages surface for
	// POST /v1/messages/count_tokens (never a stream).
	CountTokens bool
	// Header is the client's request header, for an adapter that forwards
	// named client headers (the Messages pass-through's anthropic-version
	// and anthropic-beta); nil = none. Borrowed like Body.
	Header *fasthttp.RequestHeader
	// TraceParent and TraceState are the client's W3C trace headers to
	// forward, as TraceContext returned them (validated; nil = none).
	// Borrowed like Body.
	TraceParent, TraceState []byte
	// RequestID is the X-Request-Id the client's answer carries, forwarded
	// upstream (nil: the walk reads it from the answer's header). Borrowed
	// like Body.
	RequestID []byte
	// Quota checks each member's own limits as the walk reaches it; nil =
	// none (docs/quotas.md).
	Quota MemberQuota
	// Fence is the client key's residency guard (upstream.Fence); nil, or
	// a nil *upstream.Fence, admits every target. The walk reads it;
	// adapters do not.
	Fence Guard
	// tr is what translated attempts hold until the walk ends (see
	// translated.go); nil until one builds a request.
	tr *translation
}

// Guard tells the walk which targets, by index, a request may reach.
type Guard interface {
	Admits(target int) bool
}

// MemberQuota is a request's view of its chain members' own limits.
type MemberQuota interface {
	// Enter reserves room on member target for this request (giving back
	// what the member reached before held); false: skip it, with the
	// soonest wait until a skipped member has room (-1: none ever will,
	// each one's token limit being smaller than the request).
	Enter(target string) (wait time.Duration, ok bool)
}

// Adapter speaks one provider's protocol. Implementations are stateless and
// safe for concurrent use.
type Adapter interface {
	// Surfaces reports which surfaces the provider serves.
	Surfaces() router.SurfaceSet
	// BuildRequest writes one attempt's upstream request into req: method,
	// full URI, credential headers, content type and body. upstreamModel is
	// the model id after model_map. req arrives reset.
	BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error
	// ClassifyError inspects a non-2xx answer and returns its class and the
	// error envelope the client gets if this answer is final: OpenAI-shaped
	// ({"error":{...}}), Anthropic-shaped on the messages surface.
	ClassifyError(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte)
	// TranslateResponse appends the OpenAI-shaped body of a 2xx non-stream
	// answer to dst.
	TranslateResponse(dst, body []byte, c *Call) ([]byte, error)
	// NewStream returns a decoder for one 2xx streaming answer.
	NewStream(c *Call) StreamDecoder
}

// StreamDecoder turns an upstream stream into OpenAI SSE frames. One decoder
// serves one stream; it is not safe for concurrent use.
type StreamDecoder interface {
	// Next reads from r until it can append at least one complete OpenAI SSE
	// frame ("data: ...\n\n") to dst, and returns dst. At the clean end of the
	// stream it appends "data: [DONE]\n\n" and returns io.EOF. An error event
	// from the upstream is returned as a *StreamError; a stream that ends
	// before its terminal event is a ClassTransport *StreamError.
	Next(dst []byte, r *bufio.Reader) ([]byte, error)
}

// StreamError is an upstream failure reported inside a stream.
type StreamError struct {
	Class Class
	// Status is the HTTP status the error would have had (e.g. 429, 500).
	Status int
	// Body is the error envelope in the surface's shape (OpenAI's; on
	// messages, Anthropic's).
	Body []byte
	// Framed is true when the frame returned with the error is the
	// upstream's own error event: after the commit the relay passes it on
	// and adds no error frame of its own; before it, Body is the answer.
	Framed bool
}

func (e *StreamError) Error() string { return "upstream stream error: " + e.Class.String() }
