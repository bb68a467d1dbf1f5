package provider

import "github.com/switchyard/switchyard/internal/jsonw"

// Error types and codes of the OpenAI error envelope (docs/api.md, Errors).
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeUpstream       = "upstream_error"
	TypeRateLimit      = "rate_limit_error"
	// TypeServer is OpenAI's type for its own 500s; the gateway uses it for
	// its own bugs (a recovered panic), never for an upstream's failure.
	TypeServer = "server_error"

	CodeInvalidRequest      = "invalid_request"
	CodeRequestTooLarge     = "request_too_large"
	CodeModelNotFound       = "model_not_found"
	CodeUnsupportedEndpoint = "unsupported_endpoint"
	CodeUpstreamUnavailable = "upstream_unavailable"
	CodeProviderSaturated   = "provider_saturated"
	CodeRateLimitExceeded   = "rate_limit_exceeded"
	CodeTargetQuota         = "target_quota_exhausted"
	CodeUpstreamAuth        = "upstream_auth_error"
	CodeUpstreamError       = "upstream_error"
	CodeGatewayTimeout      = "gateway_timeout"
	CodeNotFound            = "not_found"
	CodeMethodNotAllowed    = "method_not_allowed"
	// CodeInternalError answers a gateway bug (a recovered panic): HTTP 500,
	// or an SSE error frame once a stream has started.
	CodeInternalError = "internal_error"
)

// AppendError appends the OpenAI error envelope
// {"error":{"message":…,"type":…,"param":null,"code":…}} to dst.
func AppendError(dst []byte, message, typ, code string) []byte {
	dst = append(dst, `{"error":{"message":`...)
	dst = AppendJSONString(dst, message)
	dst = append(dst, `,"type":`...)
	dst = AppendJSONString(dst, typ)
	dst = append(dst, `,"param":null,"code":`...)
	dst = AppendJSONString(dst, code)
	return append(dst, "}}"...)
}

// AppendJSONString appends s as a JSON string literal (quotes included).
// Invalid UTF-8 is replaced by U+FFFD so the output is always valid JSON.
func AppendJSONString(dst []byte, s string) []byte { return jsonw.String(dst, s) }
