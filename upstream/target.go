package upstream

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/internal/byteconv"
)

// Target is one runtime target, built by Pool.Target from a config.Target.
// Its exported fields are immutable after construction and safe to read
// concurrently; its resilience state (breaker, park, limiter, HostClient)
// is shared with every other Target of the same identity in the same Pool,
// including Targets built from earlier configs (docs/routing.md, 9).
type Target struct {
	// Name is the target's virtual_key.
	Name string
	// Provider is "openai", "anthropic" or "bedrock".
	Provider string
	// Endpoint holds the base URL and credentials. Secret: never log it.
	Endpoint Endpoint
	// Adapter speaks the provider's protocol.
	Adapter Adapter
	// ModelMap maps a visible model id to the id sent upstream; nil = none.
	ModelMap map[string]string
	// Timeout bounds one attempt; for a stream, until its first event, and
	// then the longest silence between two events. Always > 0.
	Timeout time.Duration
	// Retry is the member's retry policy.
	Retry RetryPolicy
	// Index is the target's position in its configuration's targets (the
	// bit Call.Fence checks); Residency its residency label, "" = none.
	// Set by the State that owns the Target.
	Index     int
	Residency string

	state *targetState
	// secrets are the credentials redacted from client-bound bytes (see
	// redact); nil when the target has none.
	secrets []secret
}

// RetryPolicy is a member's retry settings (config.Retry).
type RetryPolicy struct {
	// Attempts is the total tries on the member; always >= 1.
	Attempts int
	// OnStatusCodes, when non-empty, replaces the default retryable status
	// set (408, 5xx). Transport errors and timeouts always retry. A 429 is
	// never retried on the same member, listed or not: it parks the target
	// (docs/routing.md, 8) and the walk moves on, so docs/configuration.md, Configuration reference's "429" in the default
	// set has no effect by design.
	OnStatusCodes []int
	// InitialBackoff is the first backoff ceiling; it doubles per retry and
	// the sleep is uniform in [0, ceiling) (full jitter).
	InitialBackoff time.Duration
}

// RetryableStatus reports whether an answer with HTTP status code may be
// retried on the same member. The walk asks only for 408 and 5xx answers;
// 429 and other 4xx are never retried.
func (r *RetryPolicy) RetryableStatus(code int) bool {
	if len(r.OnStatusCodes) > 0 {
		for _, c := range r.OnStatusCodes {
			if c == code {
				return true
			}
		}
		return false
	}
	return code == fasthttp.StatusRequestTimeout || code >= 500
}

// UpstreamModel returns the model id sent upstream for the visible id
// model: model_map's value, or model itself. It does not allocate.
func (t *Target) UpstreamModel(model []byte) []byte {
	if t.ModelMap != nil {
		if m, ok := t.ModelMap[string(model)]; ok {
			return byteconv.Bytes(m)
		}
	}
	return model
}

// Breaker returns the target's circuit breaker (shared across reloads).
func (t *Target) Breaker() *Breaker { return &t.state.breaker }

// Park returns the target's 429 park (shared across reloads).
func (t *Target) Park() *Park { return &t.state.park }

// Limiter returns the target's concurrency limiter (shared across reloads).
func (t *Target) Limiter() *Limiter { return &t.state.limiter }

// client returns the identity's current HostClient.
func (t *Target) client() *fasthttp.HostClient { return t.state.client.Load() }

// TokenFailures returns how many of the target's OAuth token fetches have
// failed since its identity's token source started, and false when the
// target has no token source (an API key or no credential). Targets of one
// identity share the source and so the count.
func (t *Target) TokenFailures() (uint64, bool) {
	if ts := t.Endpoint.Token; ts != nil {
		return uint64(ts.Fails()), true
	}
	return 0, false
}
