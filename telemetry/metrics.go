// Package telemetry holds Switchyard's observability: Prometheus metrics
// (Metrics, an upstream.Observer with a /metrics handler), the one-line-a-
// request access log (AccessLog) and the process logger (NewLogger). Every
// series name, type and label is documented in METRICS.md.
//
// Label values come only from the configuration (target names, client key
// names) or bounded enums (surfaces, HTTP status codes, outcome classes,
// reload results, token kinds), never from request input such as the model
// or the user. Nothing here
// reads headers or bodies, so no credential can reach a metric or a log
// line. The package never imports hotpath.
package telemetry

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// ContentType is the Content-Type of the /metrics answer: Prometheus text
// exposition format 0.0.4.
const ContentType = "text/plain; version=0.0.4"

// Series family names (METRICS.md documents each).
const (
	famRequests  = "switchyard_requests_total"
	famAttempts  = "switchyard_upstream_attempts_total"
	famDuration  = "switchyard_upstream_duration_seconds"
	famFailovers = "switchyard_failovers_total"
	famSkips     = "switchyard_skips_total"
	famStreams   = "switchyard_streams_total"
	famParks     = "switchyard_parks_total"
	famCircuit   = "switchyard_circuit_state"
	famParked    = "switchyard_target_parked"
	famQueue     = "switchyard_queue_depth"
	famInflight  = "switchyard_inflight"
	famReloads   = "switchyard_config_reloads_total"
	famReloadOK  = "switchyard_config_last_reload_success"
	famReloadTS  = "switchyard_config_last_reload_timestamp_seconds"
	famInfo      = "switchyard_config_info"
	famPanics    = "switchyard_panics_total"
	famDiscards  = "switchyard_upstream_conn_discards_total"
	famTokenFail = "switchyard_upstream_token_failures_total"
	// famKeyRequests and famTokens are labelled by client key name (key="" without auth).
	famKeyRequests = "switchyard_key_requests_total"
	famTokens      = "switchyard_tokens_total"
)

// SurfaceNone is the surface of a request that reached no API surface: an
// unknown path, a wrong method on one of the gateway's own endpoints, or a
// request fasthttp refused before its path could be read. It is labelled
// "none" in switchyard_requests_total and in the access log; any other
// out-of-range surface is labelled "unknown". Both keep the label bounded.
const SurfaceNone = router.NumSurfaces

// surfaceLabel is the label value (and access-log field) of surface s.
func surfaceLabel(s router.Surface) string {
	switch {
	case s < router.NumSurfaces:
		return s.String()
	case s == SurfaceNone:
		return "none"
	}
	return "unknown"
}

// durationBuckets are the upper bounds (seconds) of
// switchyard_upstream_duration_seconds: from a fast embedding call to a
// long non-stream completion.
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// statusSlots bounds the status label: codes 100..599 are their own slot,
// anything else is slot 0, labelled "other".
const statusSlots = 600

// Metrics records Switchyard's Prometheus series and serves them. It
// implements upstream.Observer. Create it with NewMetrics; the zero value
// is not usable. All methods are safe for concurrent use. Attempt, Skip,
// Failover, StreamEnd and Request do not allocate once the series they
// touch exist (the first event of a target/outcome pair creates its
// series).
type Metrics struct {
	// set holds every counter and histogram; it is this Metrics' own, never
	// the VictoriaMetrics default set, so several Metrics may coexist.
	set *metrics.Set

	// mu serializes series creation and removal (the slow paths) and
	// guards cfg.
	mu sync.Mutex
	// series maps a target name to its series. Copy-on-write: readers load
	// the map without locking; writers copy it under mu.
	series atomic.Pointer[map[string]*targetSeries]
	// targets are the current targets whose state the scrape-time gauges
	// report (SetTargets), deduplicated by name.
	targets atomic.Pointer[[]*upstream.Target]

	// requests[surface][status slot], created on first use. The surface row
	// SurfaceNone holds requests on no API surface ("none"); the last row
	// holds any other out-of-range surface ("unknown").
	requests [router.NumSurfaces + 2][statusSlots]atomic.Pointer[metrics.Counter]

	// panics counts panics recovered while serving (Panicked).
	panics *metrics.Counter

	// keys holds switchyard_key_requests_total by client key name; keysMu
	// is its lock.
	keys   nameMap[keySeries]
	keysMu sync.Mutex

	reloads [numReloadResults]*metrics.Counter
	cfg     configState // under mu

	// now is the clock the scrape-time gauges read breakers and parks with.
	now func() time.Time
	// extra write more series (with their # HELP texts) after the set's:
	// the quota metrics. Set before serving (AddSeries).
	extra []func(io.Writer)
	// process adds the process and Go runtime series to each scrape (tests
	// that parse exact output turn it off).
	process bool
}

// NewMetrics returns a Metrics with its own series set, no targets and no
// config loaded yet.
func NewMetrics() *Metrics {
	// The library's switch is global; every exposition of this process
	// carries # HELP and # TYPE lines.
	metrics.ExposeMetadata(true)
	m := &Metrics{set: metrics.NewSet(), now: time.Now, process: true}
	m.keys.mu = &m.keysMu
	empty := map[string]*targetSeries{}
	m.series.Store(&empty)
	m.targets.Store(&[]*upstream.Target{})
	for i, r := range reloadResults {
		m.reloads[i] = m.set.NewCounter(seriesName(famReloads, "result", r))
	}
	m.panics = m.set.NewCounter(famPanics)
	return m
}

// AddSeries makes every scrape include what write writes (Prometheus text,
// each family with its own # HELP text). Call before serving.
func (m *Metrics) AddSeries(write func(io.Writer)) { m.extra = append(m.extra, write) }

// Request counts one answered API request on surface with HTTP status
// code status (switchyard_requests_total). A status outside 100..599 is
// counted as "other". It does not allocate after the first request with the
// same surface and status.
func (m *Metrics) Request(surface router.Surface, status int) {
	s := int(surface)
	if s > int(SurfaceNone) {
		s = int(SurfaceNone) + 1 // "unknown"
	}
	if status < 100 || status >= statusSlots {
		status = 0
	}
	p := &m.requests[s][status]
	c := p.Load()
	if c == nil {
		c = m.requestSlow(p, router.Surface(s), status)
	}
	c.Inc()
}

// requestSlow creates the counter of one (surface, status) pair.
func (m *Metrics) requestSlow(p *atomic.Pointer[metrics.Counter], s router.Surface, status int) *metrics.Counter {
	code := "other"
	if status != 0 {
		code = strconv.Itoa(status)
	}
	c := m.set.GetOrCreateCounter(seriesName(famRequests, "surface", surfaceLabel(s), "status", code))
	p.Store(c)
	return c
}

// Panic counts one panic recovered while serving a request
// (switchyard_panics_total); the caller logs it. It does not allocate.
//
// Metrics deliberately does not implement upstream.PanicObserver: the
// daemon counts every panic in its hotpath.Gateway.Panicked hook, which
// hears of handler and stream-writer panics alike, so a PanicObserver
// method here would count a stream writer's panic twice.
func (m *Metrics) Panic() { m.panics.Inc() }

// SetTargets makes ts the targets reported by the scrape-time gauges
// (circuit state, parked, queue depth, in-flight) and creates their
// per-target series. Call it at startup and after each reload with the
// State's targets. Every series of a target whose name is no longer in ts
// stops being reported, counters and histogram included; an event still
// arriving for it from a request in flight on the old config is dropped,
// or, when it arrives by name after the swap, re-creates the series until
// the next SetTargets. Duplicate names keep the first; nil entries are
// ignored. ts is not retained (the slice is copied).
func (m *Metrics) SetTargets(ts []*upstream.Target) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.series.Load()
	next := make(map[string]*targetSeries, len(ts))
	cur := make([]*upstream.Target, 0, len(ts))
	for _, t := range ts {
		if t == nil {
			continue
		}
		if _, dup := next[t.Name]; dup {
			continue
		}
		s := old[t.Name]
		if s == nil {
			s = m.newTargetSeriesLocked(t.Name)
		}
		next[t.Name] = s
		cur = append(cur, t)
	}
	for name, s := range old {
		if _, keep := next[name]; !keep {
			m.dropTargetSeriesLocked(s)
		}
	}
	m.series.Store(&next)
	m.targets.Store(&cur)
}

// Handler serves GET /metrics: the Prometheus text format with Content-Type
// ContentType. It may be set as hotpath.Gateway.Metrics.
func (m *Metrics) Handler(rc *fasthttp.RequestCtx) {
	rc.SetContentType(ContentType)
	m.WritePrometheus(rc)
}

// WritePrometheus writes every series to w in the Prometheus text
// exposition format, each family preceded by its # HELP and # TYPE lines
// (docs/operations.md, Metrics and logs): counters and histograms, then the gauges computed now
// from the current targets and config state, then process and Go runtime
// series (go_memstats_mallocs_total among them).
func (m *Metrics) WritePrometheus(w io.Writer) {
	var buf bytes.Buffer
	m.set.WritePrometheus(&buf)
	for _, f := range m.extra {
		f(&buf)
	}
	b := m.appendTargetGauges(buf.Bytes(), m.now())
	b = m.appendConfigGauges(b)
	buf = *bytes.NewBuffer(b)
	if m.process {
		metrics.WriteProcessMetrics(&buf)
		metrics.WriteFDMetrics(&buf)
	}
	writeWithHelp(w, buf.Bytes())
}

// Breaker state values of switchyard_circuit_state.
const (
	circuitClosed   = 0
	circuitHalfOpen = 1
	circuitOpen     = 2
)

func circuitValue(s upstream.BreakerState) uint64 {
	switch s {
	case upstream.BreakerOpen:
		return circuitOpen
	case upstream.BreakerHalfOpen:
		return circuitHalfOpen
	}
	return circuitClosed
}

// appendTargetGauges appends the per-target gauges, one family after the
// other (the text format wants a family's lines together), read from the
// targets' live state as of now.
func (m *Metrics) appendTargetGauges(b []byte, now time.Time) []byte {
	ts := *m.targets.Load()
	if len(ts) == 0 {
		return b
	}
	gauge := func(b []byte, family string, value func(t *upstream.Target) uint64) []byte {
		b = appendMetadata(b, family, "gauge")
		for _, t := range ts {
			b = append(b, family...)
			b = append(b, `{target=`...)
			b = appendLabelValue(b, t.Name)
			b = append(b, "} "...)
			b = strconv.AppendUint(b, value(t), 10)
			b = append(b, '\n')
		}
		return b
	}
	b = gauge(b, famCircuit, func(t *upstream.Target) uint64 { return circuitValue(t.Breaker().State(now)) })
	b = gauge(b, famParked, func(t *upstream.Target) uint64 {
		if t.Park().Parked(now) {
			return 1
		}
		return 0
	})
	b = gauge(b, famQueue, func(t *upstream.Target) uint64 { return uint64(max(t.Limiter().QueueDepth(), 0)) })
	b = gauge(b, famInflight, func(t *upstream.Target) uint64 { return uint64(max(t.Limiter().InFlight(), 0)) })
	// Counters kept by the targets' connection pools, read at scrape time
	// like the gauges; a reason no connection was dropped for reads 0.
	b = appendMetadata(b, famDiscards, "counter")
	for i := 1; i < len(upstream.DiscardReasons); i++ {
		for _, t := range ts {
			b = append(b, famDiscards...)
			b = append(b, `{target=`...)
			b = appendLabelValue(b, t.Name)
			b = append(b, `,reason="`...)
			b = append(b, upstream.DiscardReasons[i]...)
			b = append(b, "\"} "...)
			b = strconv.AppendUint(b, t.ConnDiscards(i), 10)
			b = append(b, '\n')
		}
	}
	// The token sources' failed fetches, for the targets that have one.
	meta := false
	for _, t := range ts {
		n, ok := t.TokenFailures()
		if !ok {
			continue
		}
		if !meta {
			b = appendMetadata(b, famTokenFail, "counter")
			meta = true
		}
		b = append(b, famTokenFail...)
		b = append(b, `{target=`...)
		b = appendLabelValue(b, t.Name)
		b = append(b, "} "...)
		b = strconv.AppendUint(b, n, 10)
		b = append(b, '\n')
	}
	return b
}
