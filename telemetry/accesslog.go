package telemetry

import (
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// Bounds on request-supplied values written to the access log, so a client
// cannot make one log line arbitrarily long.
const (
	// MaxModelBytes is the most of the model id an access line holds.
	MaxModelBytes = 256
	// MaxRequestIDBytes is the most of the request id an access line holds.
	MaxRequestIDBytes = 128
	// MaxDroppedToolsBytes is the most of dropped_tools an access line holds.
	MaxDroppedToolsBytes = 256
)

// Entry is what the access log records about one request (docs/operations.md, Metrics and logs). It has
// no field for headers, bodies or credentials on purpose: nothing secret
// can reach an access line. The byte slices are read during Log only and
// may be reused afterwards.
type Entry struct {
	// RequestID is the X-Request-Id echoed or generated.
	RequestID []byte
	// Surface is the API surface; SurfaceNone (logged "none") for a
	// request on no API surface.
	Surface router.Surface
	// Model is the model id the client asked for (request input: written as
	// an escaped JSON string, truncated to MaxModelBytes).
	Model []byte
	// Rule is the matched condition's 0-based index; -1 (any negative
	// other than RuleNotRouted) is the no-match fallback; RuleNotRouted is a
	// request refused before routing (bad body or header, no config).
	Rule int
	// Walked holds the names of the chain members the walk reached, in
	// order (tried or skipped); nil = none.
	Walked []string
	// Target is the name of the last member tried ("" = none).
	Target string
	// Attempts is the number of upstream calls made.
	Attempts int
	// Status is the HTTP status written to the client.
	Status int
	// Latency is the time from the request's arrival to its end (for a
	// stream: to the stream's end when logged then).
	Latency time.Duration
	// TTFB is the time to the first byte from the upstream; logged for
	// streams only.
	TTFB time.Duration
	// Stream is true for a streamed answer.
	Stream bool
	// Class is the request's outcome class (upstream.ClassOK on success).
	Class upstream.Class
	// Key is the name of the client key that authenticated the request; "" without auth.
	Key string
	// Usage is the token usage of a successful answer (upstream.Result's);
	// the zero value logs no token fields.
	Usage upstream.Usage
	// TraceID is the 32 hex digits of the trace id of the request's valid
	// W3C traceparent header (upstream.TraceID); nil = none.
	TraceID []byte
	// Spend is the answer's cost in micro-USD when HasSpend (the answering
	// target has a price for the model and usage was reported).
	Spend    int64
	HasSpend bool
	// Steps are the walk's upstream calls and skips in order (for the
	// audit log); nil = none. ConfigHash is the hash of the configuration
	// that routed the request; "" when it was refused before the walk.
	Steps      []Step
	ConfigHash string
	// Batch names the batch API call the record is for (its API is then
	// the record's surface); the zero value: not one.
	Batch BatchCall
	// DroppedTools names the hosted tools a translation dropped (the
	// answer's X-Gateway-Dropped-Tools header, comma-separated; written
	// truncated to MaxDroppedToolsBytes); nil = none. A socket's responses
	// have no headers of their own: this is where they are named.
	DroppedTools []byte
}

// Step is one upstream call or skip of a walk: the member and its class.
type Step struct {
	Target *upstream.Target
	Class  upstream.Class
	// Refused: the residency guard stopped the walk at Target, uncalled.
	Refused bool
	// Skipped: the walk passed Target over without a call (parked, circuit
	// open, saturated, out of quota).
	Skipped bool
	// Took is a call's duration (a stream's: to its first byte); 0 for a
	// skip or a refusal.
	Took time.Duration
}

// RuleNotRouted is Entry.Rule for a request refused before it was routed:
// it is logged as rule "none", distinct from the no-match "fallback".
const RuleNotRouted = -2

// AccessLog writes one line a request through a zerolog.Logger. A nil
// *AccessLog logs nothing (access_log: false). Safe for concurrent use.
type AccessLog struct {
	l zerolog.Logger
}

// NewAccessLog returns an access log writing through l. Access lines are
// written at info level even when l's level is higher (warn, error): the
// config's access_log switch, not log.level, decides whether they are
// written. A disabled logger (zerolog.Disabled or zerolog.Nop) writes none.
func NewAccessLog(l zerolog.Logger) *AccessLog {
	if lv := l.GetLevel(); lv > zerolog.InfoLevel && lv < zerolog.Disabled {
		l = l.Level(zerolog.InfoLevel)
	}
	return &AccessLog{l: l}
}

// Log writes e as one line with the fields request_id, surface, model
// (model_truncated: true when cut), rule ("fallback", "none" when not
// routed, or the index; always a string so the field has one type), chain (array of target names),
// target, attempts, status, outcome (the class name), stream, latency_ms
// and, for streams, ttfb_ms (milliseconds, microsecond precision); then,
// when known, key (the client key's name), the usage (prompt_tokens, the
// whole input, and its parts input_tokens (uncached), cache_read_tokens
// and cache_write_tokens; completion_tokens, the output), trace_id and
// dropped_tools. It does not allocate.
func (a *AccessLog) Log(e *Entry) {
	if a == nil || e == nil {
		return
	}
	ev := a.l.Info()
	if ev == nil {
		return // disabled
	}
	model, cut := truncateUTF8(e.Model, MaxModelBytes)
	reqID, _ := truncateUTF8(e.RequestID, MaxRequestIDBytes)
	surface := surfaceLabel(e.Surface)
	if e.Batch.API != "" {
		surface = e.Batch.API
	}
	ev.Bytes("request_id", reqID).
		Str("surface", surface).
		Bytes("model", model)
	if e.Batch.API != "" {
		id, _ := truncateUTF8(e.Batch.ID, MaxRequestIDBytes)
		ev.Str("operation", e.Batch.Op).Bytes("object_id", id)
	}
	if cut {
		ev.Bool("model_truncated", true)
	}
	switch {
	case e.Rule == RuleNotRouted:
		ev.Str("rule", "none")
	case e.Rule < 0:
		ev.Str("rule", "fallback")
	default:
		var buf [20]byte
		ev.Bytes("rule", strconv.AppendInt(buf[:0], int64(e.Rule), 10))
	}
	ev.Strs("chain", e.Walked).
		Str("target", e.Target).
		Int("attempts", e.Attempts).
		Int("status", e.Status).
		Str("outcome", e.Class.String()).
		Bool("stream", e.Stream).
		Float64("latency_ms", millis(e.Latency))
	if e.Stream {
		ev.Float64("ttfb_ms", millis(e.TTFB))
	}
	if e.Key != "" {
		ev.Str("key", e.Key)
	}
	if u := &e.Usage; u.HasPrompt {
		ev.Int64("prompt_tokens", u.Prompt).
			Int64("input_tokens", u.Input()).
			Int64("cache_read_tokens", u.CacheRead).
			Int64("cache_write_tokens", u.CacheWrite)
	}
	if e.Usage.HasCompletion {
		ev.Int64("completion_tokens", e.Usage.Completion)
	}
	if len(e.TraceID) > 0 {
		ev.Bytes("trace_id", e.TraceID)
	}
	if e.HasSpend {
		ev.Float64("spend_usd", float64(e.Spend)/1e6)
	}
	if len(e.DroppedTools) > 0 {
		d, _ := truncateUTF8(e.DroppedTools, MaxDroppedToolsBytes)
		ev.Bytes("dropped_tools", d)
	}
	ev.Msg("request")
}

// millis returns d in milliseconds with microsecond precision.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// truncateUTF8 returns b cut to at most n bytes, backing off to the start
// of a UTF-8 sequence so a multi-byte character is not split; cut reports
// whether anything was dropped.
func truncateUTF8(b []byte, n int) (out []byte, cut bool) {
	if len(b) <= n {
		return b, false
	}
	i := n
	for k := 0; k < 3 && i > 0 && b[i]&0xC0 == 0x80; k++ {
		i--
	}
	return b[:i], true
}
