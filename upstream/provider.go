package upstream

import (
	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/router"
)

// The provider package holds every provider's protocol: adapters, request
// and response translation, stream decoders, usage readers and error
// envelopes. These are its names as upstream's callers have always used
// them, so the walk, the daemon and the handlers need no second import.

type (
	Class         = provider.Class
	Endpoint      = provider.Endpoint
	Call          = provider.Call
	MemberQuota   = provider.MemberQuota
	Adapter       = provider.Adapter
	StreamDecoder = provider.StreamDecoder
	StreamError   = provider.StreamError
	Usage         = provider.Usage
	TokenSource   = provider.TokenSource
	RequestError  = provider.RequestError
)

const (
	ClassOK                 = provider.ClassOK
	ClassTransport          = provider.ClassTransport
	ClassTimeout            = provider.ClassTimeout
	ClassServer             = provider.ClassServer
	ClassRateLimited        = provider.ClassRateLimited
	ClassContextLength      = provider.ClassContextLength
	ClassAuth               = provider.ClassAuth
	ClassClient             = provider.ClassClient
	ClassCanceled           = provider.ClassCanceled
	ClassCircuitOpen        = provider.ClassCircuitOpen
	ClassParked             = provider.ClassParked
	ClassSaturated          = provider.ClassSaturated
	ClassQuota              = provider.ClassQuota
	TypeInvalidRequest      = provider.TypeInvalidRequest
	TypeUpstream            = provider.TypeUpstream
	TypeRateLimit           = provider.TypeRateLimit
	TypeServer              = provider.TypeServer
	CodeInvalidRequest      = provider.CodeInvalidRequest
	CodeRequestTooLarge     = provider.CodeRequestTooLarge
	CodeModelNotFound       = provider.CodeModelNotFound
	CodeUnsupportedEndpoint = provider.CodeUnsupportedEndpoint
	CodeUpstreamUnavailable = provider.CodeUpstreamUnavailable
	CodeProviderSaturated   = provider.CodeProviderSaturated
	CodeRateLimitExceeded   = provider.CodeRateLimitExceeded
	CodeTargetQuota         = provider.CodeTargetQuota
	CodeUpstreamAuth        = provider.CodeUpstreamAuth
	CodeUpstreamError       = provider.CodeUpstreamError
	CodeGatewayTimeout      = provider.CodeGatewayTimeout
	CodeNotFound            = provider.CodeNotFound
	CodeMethodNotAllowed    = provider.CodeMethodNotAllowed
	CodeInternalError       = provider.CodeInternalError
	AnthropicInvalidRequest = provider.AnthropicInvalidRequest
	AnthropicAuthentication = provider.AnthropicAuthentication
	AnthropicPermission     = provider.AnthropicPermission
	AnthropicNotFound       = provider.AnthropicNotFound
	AnthropicRateLimit      = provider.AnthropicRateLimit
	AnthropicAPI            = provider.AnthropicAPI
	AnthropicOverloaded     = provider.AnthropicOverloaded
)

// ErrNoToken is provider.ErrNoToken.
var ErrNoToken = provider.ErrNoToken

// AppendError is provider.AppendError.
func AppendError(dst []byte, message, typ, code string) []byte {
	return provider.AppendError(dst, message, typ, code)
}

// AppendJSONString is provider.AppendJSONString.
func AppendJSONString(dst []byte, s string) []byte { return provider.AppendJSONString(dst, s) }

// AppendSurfaceError is provider.AppendSurfaceError.
func AppendSurfaceError(dst []byte, s router.Surface, status int, message, typ, code string) []byte {
	return provider.AppendSurfaceError(dst, s, status, message, typ, code)
}

// AnthropicErrorType is provider.AnthropicErrorType.
func AnthropicErrorType(status int) string { return provider.AnthropicErrorType(status) }

// AppendAnthropicError is provider.AppendAnthropicError.
func AppendAnthropicError(dst []byte, typ, message string) []byte {
	return provider.AppendAnthropicError(dst, typ, message)
}

// ReadUsage is provider.ReadUsage.
func ReadUsage(body []byte) (u Usage, ok bool) { return provider.ReadUsage(body) }

// RewriteModel is provider.RewriteModel.
func RewriteModel(dst, body, model []byte) ([]byte, error) {
	return provider.RewriteModel(dst, body, model)
}

// adapters maps each provider of the registry to its adapter. Read-only.
var adapters = func() map[string]Adapter {
	m := make(map[string]Adapter, len(provider.All()))
	for _, p := range provider.All() {
		m[p.Name] = p.Adapter
	}
	return m
}()
