// Package tracing exports a span per gateway request, with a child span
// per upstream attempt, to an OpenTelemetry collector over OTLP/HTTP
// (docs/console.md, Tracing). Spans carry the GenAI semantic conventions'
// attributes; an incoming W3C traceparent is their parent; export is
// batched on the SDK's own goroutine, off the request path.
//
// Off (no tracing.otlp_endpoint) there is no *Tracer: the hot path checks
// for nil and does nothing else, so tracing off costs nothing.
package tracing

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// Tracer starts request spans. Safe for concurrent use. A nil *Tracer is
// tracing off.
type Tracer struct {
	tp *sdktrace.TracerProvider
	tr trace.Tracer
	// ratio is sample_ratio: Start decides sampling itself, before the SDK
	// is asked for anything, so a request not sampled costs no allocation.
	ratio float64
}

// New returns the Tracer for cfg, exporting in batches to its OTLP/HTTP
// endpoint (a URL without a path gets /v1/traces), or nil when tracing is
// off. version is the gateway's, for the service.version resource attribute.
func New(cfg config.Tracing, version string) (*Tracer, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	u, err := url.Parse(cfg.OTLPEndpoint)
	if err != nil {
		return nil, fmt.Errorf("tracing.otlp_endpoint: %w", err)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	return NewWithExporter(exp, cfg.SampleRatio, version), nil
}

// NewWithExporter is New with the exporter given (tests pass an in-memory
// one). Spans are sampled by the incoming traceparent's sampled flag when
// there is one, else with probability ratio.
func NewWithExporter(exp sdktrace.SpanExporter, ratio float64, version string) *Tracer {
	res := resource.NewSchemaless(
		attribute.String("service.name", "switchyard"),
		attribute.String("service.version", version),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		// Start has decided already (see Tracer.ratio).
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	return &Tracer{tp: tp, tr: tp.Tracer("github.com/switchyard/switchyard"), ratio: ratio}
}

// Shutdown exports the spans still queued and stops the exporter; ctx
// bounds the wait. A nil Tracer has nothing to do.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// ForceFlush exports the spans queued so far (tests use it).
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// Attribute keys of the spans: the GenAI conventions' and Switchyard's own.
const (
	AttrOperation    = "gen_ai.operation.name"
	AttrRequestModel = "gen_ai.request.model"
	AttrSystem       = "gen_ai.system"
	AttrInputTokens  = "gen_ai.usage.input_tokens"
	AttrOutputTokens = "gen_ai.usage.output_tokens"
	AttrRule         = "switchyard.rule"
	AttrKey          = "switchyard.key"
	AttrTarget       = "switchyard.target"
	AttrChain        = "switchyard.walked"
	AttrAttempts     = "switchyard.attempts"
	AttrOutcome      = "switchyard.outcome"
	AttrRequestID    = "switchyard.request_id"
	AttrStatus       = "http.response.status_code"
)

// maxModelAttr bounds the request-supplied model id in span names and
// attributes.
const maxModelAttr = 256

// Span is one request's span. The zero value (tracing off, or the request
// not traced) does nothing. Its methods may be called from the walk's
// goroutine and then, for a stream, from the stream writer's; calls must
// not overlap (the hot path's tracker orders them).
type Span struct {
	span trace.Span
	tr   trace.Tracer
	ctx  context.Context
	op   string
	// system is the gen_ai.system of the member last called.
	system string
}

// Start begins the span of a request on surface s for model that arrived
// at start; parent and state are its valid W3C traceparent and tracestate
// (nil = none). The span is returned even when not sampled; Recording says.
func (t *Tracer) Start(start time.Time, s router.Surface, model, parent, state []byte) Span {
	// Sampling, parent-based: a parent's sampled flag decides; without
	// one, a request is sampled with probability ratio. Fast path: a
	// request not sampled returns here, having allocated nothing.
	ctx := context.Background()
	if sc, ok := parentContext(parent, state); ok {
		if !sc.IsSampled() {
			return Span{}
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	} else if t.ratio < 1 && !(rand.Float64() < t.ratio) {
		return Span{}
	}
	op := Operation(s)
	ctx, span := t.tr.Start(ctx, op, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindServer))
	if !span.IsRecording() {
		return Span{}
	}
	m := string(model[:min(len(model), maxModelAttr)])
	span.SetName(op + " " + m)
	span.SetAttributes(attribute.String(AttrOperation, op), attribute.String(AttrRequestModel, m))
	return Span{span: span, tr: t.tr, ctx: ctx, op: op}
}

// Recording reports whether the span is sampled and recorded.
func (s *Span) Recording() bool { return s.span != nil }

// AppendTraceparent appends the span's W3C traceparent, which the walk
// forwards upstream in place of the client's, to dst; dst unchanged when
// the span is not recording.
func (s *Span) AppendTraceparent(dst []byte) []byte {
	if s.span == nil {
		return dst
	}
	sc := s.span.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	dst = append(dst, "00-"...)
	dst = hex.AppendEncode(dst, tid[:])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, sid[:])
	return append(dst, "-01"...)
}

// Attempt records one upstream call to t that ended at end after took,
// with class and HTTP status (0 = none), as a child span.
func (s *Span) Attempt(t *upstream.Target, class upstream.Class, status int, took time.Duration, end time.Time) {
	if s.span == nil || t == nil {
		return
	}
	s.system = System(t.Provider)
	_, a := s.tr.Start(s.ctx, "attempt "+t.Name,
		trace.WithTimestamp(end.Add(-took)), trace.WithSpanKind(trace.SpanKindClient))
	a.SetAttributes(
		attribute.String(AttrOperation, s.op),
		attribute.String(AttrSystem, s.system),
		attribute.String(AttrTarget, t.Name),
		attribute.String(AttrOutcome, class.String()),
	)
	if status > 0 {
		a.SetAttributes(attribute.Int(AttrStatus, status))
	}
	if class != upstream.ClassOK {
		a.SetStatus(codes.Error, class.String())
	}
	a.End(trace.WithTimestamp(end))
}

// Skip records that the walk passed over member t (parked, circuit open,
// queue full) as an event of the request span.
func (s *Span) Skip(t *upstream.Target, class upstream.Class) {
	if s.span == nil || t == nil {
		return
	}
	s.span.AddEvent("skip", trace.WithAttributes(attribute.String(AttrTarget, t.Name), attribute.String(AttrOutcome, class.String())))
}

// Failover records that the walk left member t after class.
func (s *Span) Failover(t *upstream.Target, class upstream.Class) {
	if s.span == nil || t == nil {
		return
	}
	s.span.AddEvent("failover", trace.WithAttributes(attribute.String(AttrTarget, t.Name), attribute.String(AttrOutcome, class.String())))
}

// End completes the span with the request's record e (the access log's)
// and ends it at end.
func (s *Span) End(e *telemetry.Entry, end time.Time) {
	if s.span == nil {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.Int(AttrRule, e.Rule),
		attribute.String(AttrKey, e.Key),
		attribute.String(AttrTarget, e.Target),
		attribute.StringSlice(AttrChain, e.Walked),
		attribute.Int(AttrAttempts, e.Attempts),
		attribute.Int(AttrStatus, e.Status),
		attribute.String(AttrOutcome, e.Class.String()),
		attribute.String(AttrRequestID, string(e.RequestID)),
	}
	if s.system != "" {
		attrs = append(attrs, attribute.String(AttrSystem, s.system))
	}
	if e.Usage.HasPrompt {
		attrs = append(attrs, attribute.Int64(AttrInputTokens, e.Usage.Prompt))
	}
	if e.Usage.HasCompletion {
		attrs = append(attrs, attribute.Int64(AttrOutputTokens, e.Usage.Completion))
	}
	s.span.SetAttributes(attrs...)
	if e.Status >= 500 {
		s.span.SetStatus(codes.Error, e.Class.String())
	}
	s.span.End(trace.WithTimestamp(end))
	*s = Span{}
}

// Operation is gen_ai.operation.name for surface s.
func Operation(s router.Surface) string {
	switch s {
	case router.SurfaceCompletions:
		return "text_completion"
	case router.SurfaceEmbeddings:
		return "embeddings"
	case router.SurfaceImages:
		return "generate_content"
	}
	return "chat" // chat, responses, messages
}

// System is gen_ai.system for a target's provider: the GenAI conventions'
// names where they have one, else the provider as configured.
func System(provider string) string {
	switch provider {
	case "bedrock":
		return "aws.bedrock"
	case "azure":
		return "azure.ai.openai"
	case "vertex":
		return "gcp.vertex_ai"
	case "gemini":
		return "gcp.gemini"
	}
	return provider
}

// parentContext parses a valid W3C traceparent (as upstream.TraceContext
// passes it on) and tracestate into a remote span context.
func parentContext(parent, state []byte) (trace.SpanContext, bool) {
	// 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>
	if len(parent) < 55 || parent[2] != '-' || parent[35] != '-' || parent[52] != '-' {
		return trace.SpanContext{}, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	var flags [1]byte
	if _, err := hex.Decode(tid[:], parent[3:35]); err != nil {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(sid[:], parent[36:52]); err != nil {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(flags[:], parent[53:55]); err != nil {
		return trace.SpanContext{}, false
	}
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, Remote: true}
	if len(state) > 0 {
		if ts, err := trace.ParseTraceState(string(state)); err == nil {
			cfg.TraceState = ts
		}
	}
	sc := trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}
