package telemetry

import (
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/switchyard/switchyard/upstream"
)

// Metrics is the walk's observer.
var _ upstream.Observer = (*Metrics)(nil)

// classFamily is a per-target counter family labelled by an upstream.Class.
type classFamily uint8

const (
	cfAttempts classFamily = iota
	cfSkips
	cfFailovers
	cfStreams
	numClassFamilies
)

var classFamilies = [numClassFamilies]struct{ name, label string }{
	cfAttempts:  {famAttempts, "outcome"},
	cfSkips:     {famSkips, "reason"},
	cfFailovers: {famFailovers, "reason"},
	cfStreams:   {famStreams, "outcome"},
}

// classSlots bounds the class index: Class values below classSlots-1 have
// their own slot; any larger value shares the last one, labelled "unknown".
const classSlots = 32

func classSlot(c upstream.Class) int { return min(int(c), classSlots-1) }

// slotLabel is the label value of a class slot: Class.String, which is
// "unknown" for classes upstream does not name.
func slotLabel(slot int) string {
	if slot == classSlots-1 {
		return "unknown"
	}
	return upstream.Class(slot).String()
}

// targetSeries holds one target name's series. The histogram and the parks
// counter exist from creation; the class counters are created on first
// use. Pointers are set under Metrics.mu and read without locking.
type targetSeries struct {
	name     string
	duration *metrics.PrometheusHistogram
	parks    *metrics.Counter
	byClass  [numClassFamilies][classSlots]atomic.Pointer[metrics.Counter]
	// tokens holds switchyard_tokens_total by client key; its lock is
	// Metrics.mu.
	tokens nameMap[tokenSeries]
}

// Attempt implements upstream.Observer: it counts the attempt by target and
// outcome, records its duration in the target's histogram and, for a 429
// (ClassRateLimited, which parks the target), counts a park.
func (m *Metrics) Attempt(t *upstream.Target, class upstream.Class, _ int, took time.Duration) {
	if t == nil {
		return
	}
	s := m.target(t.Name)
	m.classCounter(s, cfAttempts, class).Inc()
	s.duration.Update(took.Seconds())
	if class == upstream.ClassRateLimited {
		s.parks.Inc()
	}
}

// Skip implements upstream.Observer: it counts a member passed over without
// a call, by target and reason (parked, circuit_open, saturated).
func (m *Metrics) Skip(t *upstream.Target, class upstream.Class) {
	if t == nil {
		return
	}
	m.classCounter(m.target(t.Name), cfSkips, class).Inc()
}

// Failover implements upstream.Observer: it counts the walk leaving target
// t, by the class of t's failure.
func (m *Metrics) Failover(t *upstream.Target, class upstream.Class) {
	if t == nil {
		return
	}
	m.classCounter(m.target(t.Name), cfFailovers, class).Inc()
}

// StreamEnd implements upstream.Observer: it counts a committed stream's
// end by target and outcome (ok, an upstream failure class, or canceled).
func (m *Metrics) StreamEnd(r upstream.Result, _ time.Duration) {
	if r.Target == nil {
		return
	}
	m.classCounter(m.target(r.Target.Name), cfStreams, r.Class).Inc()
}

// target returns the series of the target named name, creating them on
// first use.
func (m *Metrics) target(name string) *targetSeries {
	// Fast path: one atomic load and a map lookup.
	if s := (*m.series.Load())[name]; s != nil {
		return s
	}
	// Slow path: an event for a name SetTargets has not (or no longer)
	// listed.
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.series.Load()
	if s := old[name]; s != nil {
		return s
	}
	s := m.newTargetSeriesLocked(name)
	next := make(map[string]*targetSeries, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[name] = s
	m.series.Store(&next)
	return s
}

// classCounter returns the counter of family f for class c of s.
func (m *Metrics) classCounter(s *targetSeries, f classFamily, c upstream.Class) *metrics.Counter {
	slot := classSlot(c)
	p := &s.byClass[f][slot]
	if ctr := p.Load(); ctr != nil {
		return ctr // fast path
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ctr := p.Load(); ctr != nil {
		return ctr
	}
	var ctr *metrics.Counter
	if (*m.series.Load())[s.name] == s {
		fam := classFamilies[f]
		ctr = m.set.GetOrCreateCounter(seriesName(fam.name, "target", s.name, fam.label, slotLabel(slot)))
	} else {
		// s was dropped by SetTargets while this event was on its way: the
		// target is gone, so the event goes to a counter nobody reports.
		ctr = new(metrics.Counter)
	}
	p.Store(ctr)
	return ctr
}

// newTargetSeriesLocked registers the always-present series of a target.
// Called with m.mu held.
func (m *Metrics) newTargetSeriesLocked(name string) *targetSeries {
	s := &targetSeries{
		name:     name,
		duration: m.set.GetOrCreatePrometheusHistogramExt(seriesName(famDuration, "target", name), durationBuckets),
		parks:    m.set.GetOrCreateCounter(seriesName(famParks, "target", name)),
	}
	s.tokens.mu = &m.mu
	return s
}

// dropTargetSeriesLocked unregisters every series of s. Called with m.mu
// held, after which no new series can be registered for s.
func (m *Metrics) dropTargetSeriesLocked(s *targetSeries) {
	m.set.UnregisterMetric(seriesName(famDuration, "target", s.name))
	m.set.UnregisterMetric(seriesName(famParks, "target", s.name))
	m.dropTokenSeriesLocked(s)
	for f := range s.byClass {
		fam := classFamilies[f]
		for slot := range s.byClass[f] {
			if s.byClass[f][slot].Load() != nil {
				m.set.UnregisterMetric(seriesName(fam.name, "target", s.name, fam.label, slotLabel(slot)))
			}
		}
	}
}
