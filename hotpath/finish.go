package hotpath

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/tracing"
	"github.com/switchyard/switchyard/upstream"
)

// tracker follows one walked API request for Gateway.Finished (and
// Gateway.Panicked, for a stream writer's panic): it is the
// walk's Observer (forwarding every event to Gateway.Observer), notes the
// members the walk reached, and hands the finished record to Finished once
// the answer is complete.
//
// A request's answer is complete either when Walk returns, or, for a
// committed stream, when the stream ends; StreamEnd runs on fasthttp's
// stream writer goroutine and may come before Walk has returned. Both ends
// call done; the second one emits the record and pools the tracker, so
// neither touches a tracker the other has released. Nothing here refers to
// the RequestCtx after Walk returns: what the record needs of the request
// (id, model) is copied in first.
type tracker struct {
	g     *Gateway
	start time.Time
	entry telemetry.Entry
	// reqID, model and traceID own the bytes entry.RequestID, entry.Model
	// and entry.TraceID point to.
	reqID, model, traceID []byte
	// span is the request's trace span (zero when not traced); parent owns
	// the traceparent forwarded upstream in its place (see traced).
	span   tracing.Span
	parent []byte
	// names owns entry.Walked; steps owns entry.Steps.
	names []string
	steps []telemetry.Step

	// ends counts the two ends (Walk returned, stream ended) of a streamed
	// request; streamRes and streamTook are StreamEnd's report.
	ends       atomic.Int32
	streamRes  upstream.Result
	streamTook time.Duration
	// quota is the request's quota state, settled when the answer ends.
	quota quota.Request
	// dropped owns entry.DroppedTools.
	dropped []byte
}

var trackerPool = sync.Pool{New: func() any { return &tracker{} }}

// acquireTracker starts tracking a routed request; sc holds its routing.
func acquireTracker(g *Gateway, rc *fasthttp.RequestCtx, s router.Surface, sc *scratch) *tracker {
	tr := trackerPool.Get().(*tracker)
	tr.g = g
	tr.start = rc.Time()
	tr.reqID = append(tr.reqID[:0], sc.call.RequestID...)
	tr.model = append(tr.model[:0], sc.peek.Model...)
	tr.traceID = append(tr.traceID[:0], upstream.TraceIDOf(sc.call.TraceParent)...)
	tr.names = tr.names[:0]
	clear(tr.steps) // drop target pointers of old configs
	tr.steps = tr.steps[:0]
	tr.ends.Store(0)
	tr.entry = telemetry.Entry{
		RequestID: tr.reqID,
		Surface:   s,
		Model:     tr.model,
		Rule:      sc.rule,
		Stream:    sc.call.Stream,
		Key:       keyName(sc.key),
	}
	if len(tr.traceID) > 0 {
		tr.entry.TraceID = tr.traceID
	}
	if g.Tracer != nil {
		tr.traced(sc)
	}
	return tr
}

// traced starts the request's span; a recorded span's context replaces the
// client's traceparent upstream, so the provider's spans hang under it.
func (tr *tracker) traced(sc *scratch) {
	c := &sc.call
	tr.span = tr.g.Tracer.Start(tr.start, c.Surface, c.Model, c.TraceParent, c.TraceState)
	if tr.span.Recording() {
		tr.parent = tr.span.AppendTraceparent(tr.parent[:0])
		c.TraceParent = tr.parent
	}
}

// reached notes that the walk reached member t (a call or a skip); a retry
// of the same member is not noted twice.
func (tr *tracker) reached(t *upstream.Target) {
	if t == nil {
		return
	}
	if n := len(tr.names); n > 0 && tr.names[n-1] == t.Name {
		return
	}
	tr.names = append(tr.names, t.Name)
}

// Attempt implements upstream.Observer.
func (tr *tracker) Attempt(t *upstream.Target, class upstream.Class, status int, took time.Duration) {
	tr.reached(t)
	tr.steps = append(tr.steps, telemetry.Step{Target: t, Class: class, Took: took})
	if tr.span.Recording() {
		tr.span.Attempt(t, class, status, took, time.Now())
	}
	if o := tr.g.Observer; o != nil {
		o.Attempt(t, class, status, took)
	}
}

// Skip implements upstream.Observer.
func (tr *tracker) Skip(t *upstream.Target, class upstream.Class) {
	tr.reached(t)
	tr.steps = append(tr.steps, telemetry.Step{Target: t, Class: class, Skipped: true})
	tr.span.Skip(t, class)
	if o := tr.g.Observer; o != nil {
		o.Skip(t, class)
	}
}

// Panicked implements upstream.PanicObserver: a committed stream's writer
// recovered a panic.
func (tr *tracker) Panicked(v any, stack []byte) {
	if f := tr.g.Panicked; f != nil {
		f(v, stack)
	}
	if po, ok := tr.g.Observer.(upstream.PanicObserver); ok {
		po.Panicked(v, stack)
	}
}

// Failover implements upstream.Observer.
func (tr *tracker) Failover(t *upstream.Target, class upstream.Class) {
	tr.span.Failover(t, class)
	if o := tr.g.Observer; o != nil {
		o.Failover(t, class)
	}
}

// StreamEnd implements upstream.Observer. It runs on the stream writer
// goroutine, possibly before Walk returned.
func (tr *tracker) StreamEnd(r upstream.Result, took time.Duration) {
	if o := tr.g.Observer; o != nil {
		o.StreamEnd(r, took)
	}
	if tr.entry.Surface == router.SurfaceResponses && r.Class == upstream.ClassOK {
		tr.g.rememberItems(tr.entry.Key, r.ItemIDs) // before the record, so a Finished hook sees them owned
	}
	tr.streamRes, tr.streamTook = r, took
	tr.done()
}

// noteDropped copies the answer's X-Gateway-Dropped-Tools header, set by a
// translating adapter, into the record. Called before walkReturned, while
// the handler still owns rc.
func (tr *tracker) noteDropped(rc *fasthttp.RequestCtx) {
	// A scan of the answer's few fields, not Peek: Peek normalizes the name
	// on every call (about 500 instructions for this one), and the walk
	// sets the field under its canonical name, as fasthttp stores any.
	tr.dropped = tr.dropped[:0]
	for k, v := range rc.Response.Header.All() {
		if string(k) == headerDroppedTools {
			tr.dropped = append(tr.dropped, v...)
			break
		}
	}
	if len(tr.dropped) > 0 {
		tr.entry.DroppedTools = tr.dropped
	}
}

// headerDroppedTools names the hosted tools a translation dropped
// (docs/api.md).
const headerDroppedTools = "X-Gateway-Dropped-Tools"

// walkReturned records Walk's result; for a committed stream the record waits for
// StreamEnd.
func (tr *tracker) walkReturned(res upstream.Result) {
	tr.fill(res)
	if res.Stream {
		tr.done()
		return
	}
	tr.entry.Latency = res.End.Sub(tr.start)
	tr.settleQuota(res, res.End)
	tr.emit()
}

// done is called once by each end of a streamed request; the second call
// completes the record with the stream's outcome and emits it.
func (tr *tracker) done() {
	if tr.ends.Add(1) < 2 {
		return
	}
	tr.entry.Class = tr.streamRes.Class
	tr.entry.Usage = tr.streamRes.Usage
	end := time.Now()
	tr.entry.Latency = end.Sub(tr.start)
	tr.settleQuota(tr.streamRes, end)
	tr.emit()
}

func (tr *tracker) fill(res upstream.Result) {
	tr.entry.Walked = tr.names
	tr.entry.Steps = tr.steps
	if res.Target != nil {
		tr.entry.Target = res.Target.Name
	}
	tr.entry.Attempts = res.Attempts
	tr.entry.Status = res.Status
	tr.entry.Class = res.Class
	tr.entry.TTFB = res.TTFB
	tr.entry.Stream = res.Stream
	tr.entry.Usage = res.Usage
}

func (tr *tracker) emit() {
	if tr.span.Recording() {
		tr.span.End(&tr.entry, tr.start.Add(tr.entry.Latency))
	}
	if f := tr.g.Finished; f != nil {
		f(&tr.entry)
	}
	tr.entry = telemetry.Entry{}
	tr.g = nil
	tr.streamRes = upstream.Result{}
	trackerPool.Put(tr)
}

// finishEarly reports a request answered before any walk (bad request, no
// candidate, no configuration) to Finished. rule is telemetry.RuleNotRouted
// when the request was refused before routing; model is nil when the body
// was not read. Error paths may allocate.
func (g *Gateway) finishEarly(rc *fasthttp.RequestCtx, s router.Surface, rule int, model []byte) {
	g.finishKeyed(rc, s, rule, model, "")
}

// finishKeyed is finishEarly for a request that presented client key key
// (its name; "" without auth).
func (g *Gateway) finishKeyed(rc *fasthttp.RequestCtx, s router.Surface, rule int, model []byte, key string) {
	if g.Finished != nil {
		g.finishRefused(rc, s, rule, model, time.Since(rc.Time()), key)
	}
}

// finishRefused reports an answered request that no walk served, with the
// given latency and client key name, to Finished (which must be set).
func (g *Gateway) finishRefused(rc *fasthttp.RequestCtx, s router.Surface, rule int, model []byte, latency time.Duration, key string) {
	e := telemetry.Entry{
		Key:       key,
		RequestID: rc.Response.Header.Peek(headerRequestID),
		Surface:   s,
		Model:     model,
		Rule:      rule,
		Status:    rc.Response.StatusCode(),
		Class:     upstream.ClassClient,
		Latency:   latency,
		TraceID:   upstream.TraceID(&rc.Request.Header),
	}
	g.Finished(&e)
}
