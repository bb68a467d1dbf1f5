package telemetry

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/VictoriaMetrics/metrics"

	"github.com/switchyard/switchyard/upstream"
)

// Token kinds, the values of switchyard_tokens_total's kind label: the
// four parts of a usage (docs/quotas.md, Cached tokens), in tokenSeries
// order.
var tokenKinds = [numTokenKinds]string{"input", "cache_read", "cache_write", "output"}

const (
	kindInput = iota
	kindCacheRead
	kindCacheWrite
	kindOutput
	numTokenKinds
)

// nameMap maps names to *V: lock-free reads of a map published through an
// atomic pointer; inserts go to a dirty copy under mu, published once as
// many lookups missed the read map as the dirty one holds (sync.Map's
// amortization, without its interface conversions that allocate per
// lookup). Ten thousand client keys cost no quadratic copying.
type nameMap[V any] struct {
	read atomic.Pointer[map[string]*V]
	// mu guards dirty and misses; it may be shared with the owner (see
	// targetSeries.tokens).
	mu     *sync.Mutex
	dirty  map[string]*V // nil, or a superset of *read
	misses int
}

// load returns the value of name from the read map, or nil.
func (m *nameMap[V]) load(name string) *V {
	if r := m.read.Load(); r != nil {
		return (*r)[name]
	}
	return nil
}

// get returns the value of name, creating it with create (called with mu
// held) on first use.
func (m *nameMap[V]) get(name string, create func(name string) *V) *V {
	// Fast path: one atomic load and a map lookup.
	if v := m.load(name); v != nil {
		return v
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.getLocked(name, create)
}

func (m *nameMap[V]) getLocked(name string, create func(name string) *V) *V {
	if v := m.load(name); v != nil {
		return v
	}
	if m.dirty == nil {
		m.dirty = map[string]*V{}
		if r := m.read.Load(); r != nil {
			for k, v := range *r {
				m.dirty[k] = v
			}
		}
	}
	v := m.dirty[name]
	if v == nil {
		// The name may alias request-scoped memory: the map keeps a copy.
		name = strings.Clone(name)
		v = create(name)
		m.dirty[name] = v
	}
	if m.misses++; m.misses >= len(m.dirty) {
		d := m.dirty
		m.read.Store(&d)
		m.dirty, m.misses = nil, 0
	}
	return v
}

// rangeLocked calls f for every entry; mu must be held.
func (m *nameMap[V]) rangeLocked(f func(v *V)) {
	all := m.dirty
	if all == nil {
		if r := m.read.Load(); r != nil {
			all = *r
		}
	}
	for _, v := range all {
		f(v)
	}
}

// keySeries holds switchyard_key_requests_total of one client key name, by
// status: a copy-on-write map, since a key sees few distinct statuses.
type keySeries struct {
	name   string
	status atomic.Pointer[map[int]*metrics.Counter]
}

// tokenSeries holds switchyard_tokens_total of one (target, key) pair; each
// kind's counter is created with its first count.
type tokenSeries struct {
	key   string
	kinds [numTokenKinds]atomic.Pointer[metrics.Counter]
}

// Finished records one finished request (a hotpath Finished record): it
// counts it in switchyard_requests_total by surface and status and in
// switchyard_key_requests_total by client key and status, and adds a
// successful answer's token usage to switchyard_tokens_total by target,
// key and kind. It does not allocate once the series it touches exist.
func (m *Metrics) Finished(e *Entry) {
	if e == nil {
		return
	}
	if e.Batch.API != "" {
		m.batchFinished(e)
		return
	}
	m.Request(e.Surface, e.Status)
	m.keyRequest(e.Key, e.Status)
	if e.Class == upstream.ClassOK && e.Target != "" && e.Usage.Known() {
		m.Tokens(e.Target, e.Key, e.Usage)
	}
}

// keyRequest counts one request of client key key ("" = no key) with
// status (outside 100..599: "other").
func (m *Metrics) keyRequest(key string, status int) {
	if status < 100 || status >= statusSlots {
		status = 0
	}
	ks := m.keys.get(key, func(name string) *keySeries {
		ks := &keySeries{name: name}
		ks.status.Store(&map[int]*metrics.Counter{})
		return ks
	})
	if c := (*ks.status.Load())[status]; c != nil {
		c.Inc() // fast path
		return
	}
	m.keys.mu.Lock()
	old := *ks.status.Load()
	c := old[status]
	if c == nil {
		code := "other"
		if status != 0 {
			code = strconv.Itoa(status)
		}
		c = m.set.GetOrCreateCounter(seriesName(famKeyRequests, "key", ks.name, "status", code))
		next := make(map[int]*metrics.Counter, len(old)+1)
		for k, v := range old {
			next[k] = v
		}
		next[status] = c
		ks.status.Store(&next)
	}
	m.keys.mu.Unlock()
	c.Inc()
}

// Tokens adds u (the counts it has) to switchyard_tokens_total of target
// and client key key ("" = no key), by kind: uncached input, cache reads
// and cache writes when the input is known, output when it is. The cache
// kinds' series appear with their first non-zero count (a provider without
// a cache never shows them). It does not allocate once the series exist.
func (m *Metrics) Tokens(target, key string, u upstream.Usage) {
	s := m.target(target)
	ts := s.tokens.get(key, func(name string) *tokenSeries { return &tokenSeries{key: name} })
	if u.HasPrompt {
		m.addTokens(s, ts, kindInput, u.Input())
		if u.CacheRead != 0 || ts.kinds[kindCacheRead].Load() != nil {
			m.addTokens(s, ts, kindCacheRead, u.CacheRead)
		}
		if u.CacheWrite != 0 || ts.kinds[kindCacheWrite].Load() != nil {
			m.addTokens(s, ts, kindCacheWrite, u.CacheWrite)
		}
	}
	if u.HasCompletion {
		m.addTokens(s, ts, kindOutput, u.Completion)
	}
}

// addTokens adds n tokens of kind to ts.
func (m *Metrics) addTokens(s *targetSeries, ts *tokenSeries, kind int, n int64) {
	m.tokenCounter(s, ts, &ts.kinds[kind], tokenKinds[kind]).AddInt64(n)
}

// tokenCounter returns the counter *p of kind for ts, creating it on first
// use.
func (m *Metrics) tokenCounter(s *targetSeries, ts *tokenSeries, p *atomic.Pointer[metrics.Counter], kind string) *metrics.Counter {
	if c := p.Load(); c != nil {
		return c // fast path
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := p.Load(); c != nil {
		return c
	}
	var c *metrics.Counter
	if (*m.series.Load())[s.name] == s {
		c = m.set.GetOrCreateCounter(tokenSeriesName(s.name, ts.key, kind))
	} else {
		c = new(metrics.Counter) // the target was dropped meanwhile (see classCounter)
	}
	p.Store(c)
	return c
}

func tokenSeriesName(target, key, kind string) string {
	return seriesName(famTokens, "target", target, "key", key, "kind", kind)
}

// dropTokenSeriesLocked unregisters the token series of s; m.mu is held
// (it is also the lock of s.tokens).
func (m *Metrics) dropTokenSeriesLocked(s *targetSeries) {
	s.tokens.rangeLocked(func(ts *tokenSeries) {
		for k := range ts.kinds {
			if ts.kinds[k].Load() != nil {
				m.set.UnregisterMetric(tokenSeriesName(s.name, ts.key, tokenKinds[k]))
			}
		}
	})
}
