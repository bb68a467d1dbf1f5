package quota

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// Metrics holds the quota series (telemetry/METRICS.md lists them). Label
// values are key and target names from the configuration and the fixed
// limit and mode names. Safe for concurrent use.
type Metrics struct {
	set       *metrics.Set
	latency   *metrics.PrometheusHistogram
	failures  *metrics.Counter
	lostTotal *metrics.Counter
	mode      atomic.Uint32
	switches  [len(modeNames)]*metrics.Counter
	pending   func() int
	dropped   func() int64

	mu     sync.RWMutex
	spend  map[[2]string]*metrics.FloatCounter
	counts map[[3]string]*metrics.Counter
}

// storeBuckets are the upper bounds (seconds) of the store round-trip
// histogram: a loopback Redis answers in tens of µs.
var storeBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25}

func newMetrics() *Metrics {
	m := &Metrics{set: metrics.NewSet(), spend: map[[2]string]*metrics.FloatCounter{}, counts: map[[3]string]*metrics.Counter{}}
	m.latency = m.set.NewPrometheusHistogramExt("switchyard_quota_store_duration_seconds", storeBuckets)
	m.failures = m.set.NewCounter("switchyard_quota_store_failures_total")
	m.lostTotal = m.set.NewCounter("switchyard_quota_settlements_dropped_total")
	for i, name := range modeNames {
		m.switches[i] = m.set.NewCounter(`switchyard_quota_mode_switches_total{to="` + name + `"}`)
		mode := Mode(i)
		m.set.NewGauge(`switchyard_quota_mode{mode="`+name+`"}`, func() float64 {
			if Mode(m.mode.Load()) == mode {
				return 1
			}
			return 0
		})
	}
	m.set.NewGauge("switchyard_quota_settlements_pending", func() float64 {
		if m.pending == nil {
			return 0
		}
		return float64(m.pending())
	})
	return m
}

// WritePrometheus writes the quota series in the Prometheus text format,
// each family's # HELP line with its text.
func (m *Metrics) WritePrometheus(w io.Writer) {
	m.lostTotal.Set(uint64(m.lost()))
	var buf bytes.Buffer
	m.set.WritePrometheus(&buf)
	for _, line := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
		if name, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\n")), []byte("# HELP ")); ok {
			if h, known := familyHelp[string(name)]; known {
				line = []byte("# HELP " + string(name) + " " + h + "\n")
			}
		}
		_, _ = w.Write(line)
	}
}

// lost returns the settlements dropped so far.
func (m *Metrics) lost() int64 {
	if m.dropped == nil {
		return 0
	}
	return m.dropped()
}

func (m *Metrics) observeRoundTrip(d time.Duration) { m.latency.Update(d.Seconds()) }

func (m *Metrics) storeFailure() { m.failures.Inc() }

// setMode records the current mode; a change is counted as a switch.
func (m *Metrics) setMode(to Mode) {
	if old := Mode(m.mode.Swap(uint32(to))); old != to {
		m.switches[to].Inc()
	}
}

// Switches returns how many times the mode switched to mode.
func (m *Metrics) Switches(to Mode) uint64 { return m.switches[to].Get() }

// counter returns the counter family{a=x,b=y}, creating it.
func (m *Metrics) counter(family, a, x, b, y string) *metrics.Counter {
	id := [3]string{family, x, y}
	m.mu.RLock()
	c := m.counts[id]
	m.mu.RUnlock()
	if c != nil {
		return c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c = m.counts[id]; c == nil {
		c = m.set.GetOrCreateCounter(family + "{" + a + "=" + label(x) + "," + b + "=" + label(y) + "}")
		m.counts[id] = c
	}
	return c
}

// rejected counts a request refused by key's limit k.
func (m *Metrics) rejected(key string, k Kind) {
	m.counter("switchyard_quota_rejections_total", "key", key, "limit", k.String()).Inc()
}

// skipped counts a chain member passed over for its limit k.
func (m *Metrics) skipped(target string, k Kind) {
	m.counter("switchyard_quota_skips_total", "target", target, "limit", k.String()).Inc()
}

// spent adds micro-USD spent by key on target.
func (m *Metrics) spent(key, target string, micro int64) {
	id := [2]string{key, target}
	m.mu.RLock()
	c := m.spend[id]
	m.mu.RUnlock()
	if c == nil {
		m.mu.Lock()
		if c = m.spend[id]; c == nil {
			c = m.set.GetOrCreateFloatCounter(`switchyard_spend_usd_total{key=` + label(key) + `,target=` + label(target) + `}`)
			m.spend[id] = c
		}
		m.mu.Unlock()
	}
	c.Add(float64(micro) / MicroUSD)
}

// familyHelp is the # HELP text of each quota family.
var familyHelp = map[string]string{
	"switchyard_quota_rejections_total":          "Requests refused for a client key's limit, by key and limit.",
	"switchyard_quota_skips_total":               "Chain members passed over for their own limit, by target and limit.",
	"switchyard_spend_usd_total":                 "Spend in USD of answered requests, by client key and target.",
	"switchyard_quota_store_duration_seconds":    "Round-trip time of one quota store check (Redis store).",
	"switchyard_quota_store_failures_total":      "Quota store calls that failed (refused, timed out, error reply).",
	"switchyard_quota_mode":                      "1 for where checks are counted now: memory, redis, or while Redis fails local, deny or allow.",
	"switchyard_quota_mode_switches_total":       "Switches of the quota counting mode, by the mode switched to.",
	"switchyard_quota_settlements_pending":       "Settlements queued for the Redis store.",
	"switchyard_quota_settlements_dropped_total": "Settlements dropped because the queue was full.",
}

// labelEscaper escapes a label value as the Prometheus text format does.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// label quotes a label value.
func label(v string) string { return `"` + labelEscaper.Replace(v) + `"` }
