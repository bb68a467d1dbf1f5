package upstream

import (
	"time"

	"github.com/valyala/fasthttp"
)

// Response headers set by Walk on every proxied response (SPEC §3). The hot
// path sets X-Gateway-Rule and X-Request-Id itself.
const (
	HeaderTarget   = "X-Gateway-Target"
	HeaderProvider = "X-Gateway-Provider"
	HeaderModel    = "X-Gateway-Model"
	HeaderAttempts = "X-Gateway-Attempts"
)

// Result is what a walk did, for the access log and metrics.
type Result struct {
	// Target is the last member tried or skipped; nil only for an empty
	// chain.
	Target *Target
	// Attempts is the number of upstream calls made (skips not counted).
	Attempts int
	// Failovers is the number of times the walk moved to a next member.
	Failovers int
	// Status is the HTTP status written to the client (for a committed
	// stream: 200).
	Status int
	// Class is the final outcome: ClassOK on success, else the class that
	// decided the error (for a committed stream: ClassOK at commit; the
	// stream's own outcome goes to Observer.StreamEnd).
	Class Class
	// TTFB is the time from the walk's start to the first byte from the
	// upstream that answered (response headers; for a stream, its first
	// event). 0 when no upstream answered.
	TTFB time.Duration
	// Stream is true when a stream was committed: the body is written after
	// the handler returns, and Observer.StreamEnd reports its end.
	Stream bool
}

// Observer receives the events of a walk, for metrics and logs. Methods are
// called synchronously from the walk (StreamEnd from the server's stream
// writer goroutine, after the handler returned) and must be quick and safe
// for concurrent use. Target pointers are valid for the call only in the
// sense that their fields are immutable; do not keep RequestCtx data.
type Observer interface {
	// Attempt reports one upstream call: its class, the HTTP status (0 for
	// a transport error or timeout) and how long it took.
	Attempt(t *Target, class Class, status int, took time.Duration)
	// Skip reports a member passed over without a call: ClassParked,
	// ClassCircuitOpen or ClassSaturated.
	Skip(t *Target, class Class)
	// Failover reports that the walk leaves member t after class.
	Failover(t *Target, class Class)
	// StreamEnd reports the end of a committed stream: r is the walk's
	// Result with Class set to the stream's outcome (ClassOK, an upstream
	// failure class, or ClassCanceled when the client went away), and
	// took is the stream's duration from the start of the walk.
	StreamEnd(r Result, took time.Duration)
}

// NopObserver is an Observer that does nothing.
type NopObserver struct{}

// Attempt implements Observer.
func (NopObserver) Attempt(*Target, Class, int, time.Duration) {}

// Skip implements Observer.
func (NopObserver) Skip(*Target, Class) {}

// Failover implements Observer.
func (NopObserver) Failover(*Target, Class) {}

// StreamEnd implements Observer.
func (NopObserver) StreamEnd(Result, time.Duration) {}

// Walk sends call to the members of chain in order and writes the final
// answer — success, the upstream's own 4xx, or the SPEC §5 error — into
// rc's response, with the X-Gateway-Target/-Provider/-Model/-Attempts
// headers. chain must already hold only the candidates that serve the model
// and surface (the rule's members, in order): Walk never calls anything
// else. deadline is the request deadline (server.request_timeout from the
// start of the request); obs may be nil.
//
// Per member: skip it when parked or when its breaker refuses; take a
// limiter slot (a full queue skips it; the wait counts against deadline);
// try up to Retry.Attempts times with full-jitter doubling backoff (an
// upstream Retry-After wins, capped at 30 s; never sleeping past deadline),
// retrying transport errors, attempt timeouts and retryable statuses only;
// each attempt is bounded by min(now+Timeout, deadline). A 429 parks the
// member and moves on; other failover-safe classes move on; client errors
// and auth errors end the walk at once. A request timeout ends the walk.
//
// The client's X-Request-Id (or the one the hot path already put on the
// response) is forwarded; no other client header is, so the client's
// Authorization and X-Gateway-Metadata never reach an upstream.
//
// For call.Stream, the first event is read before anything is written to
// the client; once it arrives the stream is committed and relayed event by
// event with a flush each (rc.SetBodyStreamWriter), holding the limiter
// slot and the breaker ticket until it ends. call.Body and call.Model must
// stay valid until Walk returns; Walk keeps nothing of them afterwards.
func Walk(rc *fasthttp.RequestCtx, call *Call, chain []*Target, deadline time.Time, obs Observer) Result {
	panic("not implemented yet")
}
