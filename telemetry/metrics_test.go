package telemetry

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// newTarget builds a runtime target named name through a real Pool, with
// its own identity (base URL port) so its breaker, park and limiter are its
// own. Nothing dials it.
// testTargetConfig is a minimal valid target config for benchmarks.
var testTargetConfig = config.Target{VirtualKey: "bench", Provider: config.ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1"}

func newTarget(t *testing.T, p *upstream.Pool, name string, port int) *upstream.Target {
	t.Helper()
	tg, err := p.Target(&config.Target{
		VirtualKey: name,
		Provider:   config.ProviderOpenAI,
		BaseURL:    "http://127.0.0.1:" + strconv.Itoa(port) + "/v1",
		APIKey:     "sk-test-" + name,
		CircuitBreaker: config.CircuitBreaker{
			FailureThreshold: 2, SuccessThreshold: 1, MaxHalfThreshold: 1, Timeout: 30 * time.Second,
		},
		Concurrency: config.Concurrency{MaxConcurrency: 1, QueueSize: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func quietMetrics() *Metrics {
	m := NewMetrics()
	m.process = false
	return m
}

// histogram returns the expected series of one target's duration histogram
// holding values (seconds).
func histogram(target string, values ...float64) map[string]float64 {
	out := map[string]float64{}
	sum := 0.0
	for _, ub := range durationBuckets {
		n := 0
		for _, v := range values {
			if v <= ub {
				n++
			}
		}
		out[key(famDuration+"_bucket", "target", target, "le", strconv.FormatFloat(ub, 'g', -1, 64))] = float64(n)
	}
	for _, v := range values {
		sum += v
	}
	out[key(famDuration+"_bucket", "target", target, "le", "+Inf")] = float64(len(values))
	out[key(famDuration+"_sum", "target", target)] = sum
	out[key(famDuration+"_count", "target", target)] = float64(len(values))
	return out
}

func merge(ms ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// idleGauges is the scrape-time gauges of an idle, closed, unparked target.
func idleGauges(target string) map[string]float64 {
	return map[string]float64{
		key(famCircuit, "target", target):  0,
		key(famParked, "target", target):   0,
		key(famQueue, "target", target):    0,
		key(famInflight, "target", target): 0,
		// The connection pool's discard counters, read at scrape time too.
		key(famDiscards, "target", target, "reason", "closed"):      0,
		key(famDiscards, "target", target, "reason", "unsolicited"): 0,
		key(famDiscards, "target", target, "reason", "expired"):     0,
	}
}

// fixedCounters is the counters every Metrics has from NewMetrics on: the
// reload results and the panic counter (at 0 here).
func fixedCounters(success, failure, unchanged float64) map[string]float64 {
	return map[string]float64{
		famPanics:                              0,
		key(famReloads, "result", "success"):   success,
		key(famReloads, "result", "failure"):   failure,
		key(famReloads, "result", "unchanged"): unchanged,
	}
}

func TestMetricsFreshHasOnlyReloadCounters(t *testing.T) {
	m := quietMetrics()
	diffSeries(t, switchyardSeries(t, scrape(t, m)), fixedCounters(0, 0, 0))
}

func TestMetricsObserverEventsAndRequests(t *testing.T) {
	p := upstream.NewPool()
	a := newTarget(t, p, "openai", 1)
	b := newTarget(t, p, "anthropic", 2)
	m := quietMetrics()
	m.SetTargets([]*upstream.Target{a, b})

	// Durations exactly representable in binary, so sums compare exactly.
	m.Attempt(a, upstream.ClassOK, 200, 250*time.Millisecond)
	m.Attempt(a, upstream.ClassServer, 503, 62500*time.Microsecond)
	m.Attempt(b, upstream.ClassRateLimited, 429, 2*time.Second)
	m.Attempt(b, upstream.ClassRateLimited, 429, 500*time.Second) // beyond the last bucket
	m.Attempt(b, upstream.ClassTransport, 0, 0)
	m.Skip(a, upstream.ClassCircuitOpen)
	m.Skip(b, upstream.ClassParked)
	m.Skip(b, upstream.ClassParked)
	m.Skip(a, upstream.ClassSaturated)
	m.Failover(a, upstream.ClassServer)
	m.Failover(b, upstream.ClassRateLimited)
	m.StreamEnd(upstream.Result{Target: b, Class: upstream.ClassCanceled, Stream: true}, time.Second)
	m.StreamEnd(upstream.Result{Target: a, Class: upstream.ClassOK, Stream: true}, time.Second)
	m.StreamEnd(upstream.Result{Target: a, Class: upstream.ClassOK, Stream: true}, time.Second)
	m.StreamEnd(upstream.Result{Class: upstream.ClassOK}, time.Second) // no target: ignored
	m.Attempt(a, upstream.Class(200), 200, 0)                          // a class upstream does not name

	m.Request(router.SurfaceChat, 200)
	m.Request(router.SurfaceChat, 200)
	m.Request(router.SurfaceEmbeddings, 404)
	m.Request(router.SurfaceImages, 502)
	m.Request(router.SurfaceResponses, 200)
	m.Request(router.SurfaceMessages, 529)
	m.Request(router.SurfaceCompletions, 999) // out of range: "other"
	m.Request(router.SurfaceCompletions, 0)   // out of range: "other"
	m.Request(router.Surface(77), 200)        // unknown surface

	want := merge(
		fixedCounters(0, 0, 0),
		idleGauges("openai"), idleGauges("anthropic"),
		histogram("openai", 0.25, 0.0625, 0),
		histogram("anthropic", 2, 500, 0),
		map[string]float64{
			key(famAttempts, "target", "openai", "outcome", "ok"):              1,
			key(famAttempts, "target", "openai", "outcome", "server"):          1,
			key(famAttempts, "target", "openai", "outcome", "unknown"):         1,
			key(famAttempts, "target", "anthropic", "outcome", "rate_limited"): 2,
			key(famAttempts, "target", "anthropic", "outcome", "transport"):    1,
			key(famParks, "target", "openai"):                                  0,
			key(famParks, "target", "anthropic"):                               2,
			key(famSkips, "target", "openai", "reason", "circuit_open"):        1,
			key(famSkips, "target", "openai", "reason", "saturated"):           1,
			key(famSkips, "target", "anthropic", "reason", "parked"):           2,
			key(famFailovers, "target", "openai", "reason", "server"):          1,
			key(famFailovers, "target", "anthropic", "reason", "rate_limited"): 1,
			key(famStreams, "target", "anthropic", "outcome", "canceled"):      1,
			key(famStreams, "target", "openai", "outcome", "ok"):               2,
			key(famRequests, "surface", "chat", "status", "200"):               2,
			key(famRequests, "surface", "embeddings", "status", "404"):         1,
			key(famRequests, "surface", "images", "status", "502"):             1,
			key(famRequests, "surface", "responses", "status", "200"):          1,
			key(famRequests, "surface", "messages", "status", "529"):           1,
			key(famRequests, "surface", "completions", "status", "other"):      2,
			key(famRequests, "surface", "unknown", "status", "200"):            1,
		},
	)
	diffSeries(t, switchyardSeries(t, scrape(t, m)), want)
}

// TestMetricsPanicsAndSurfaceNone: Panic counts switchyard_panics_total,
// and requests on no API surface get the bounded label "none", distinct
// from an out-of-range surface's "unknown".
func TestMetricsPanicsAndSurfaceNone(t *testing.T) {
	m := quietMetrics()
	m.Panic()
	m.Panic()
	m.Request(SurfaceNone, 404)
	m.Request(SurfaceNone, 404)
	m.Request(SurfaceNone, 413)
	m.Request(SurfaceNone+1, 200)
	want := merge(fixedCounters(0, 0, 0), map[string]float64{
		famPanics: 2,
		key(famRequests, "surface", "none", "status", "404"):    2,
		key(famRequests, "surface", "none", "status", "413"):    1,
		key(famRequests, "surface", "unknown", "status", "200"): 1,
	})
	diffSeries(t, switchyardSeries(t, scrape(t, m)), want)
}

func TestMetricsHistogramBucketsAreStandard(t *testing.T) {
	p := upstream.NewPool()
	a := newTarget(t, p, "a", 1)
	m := quietMetrics()
	m.Attempt(a, upstream.ClassOK, 200, 3*time.Second)
	var les []string
	var lastCount float64 = -1
	for _, s := range parseExposition(t, scrape(t, m)) {
		if s.name != famDuration+"_bucket" {
			continue
		}
		les = append(les, s.labels["le"])
		if s.value < lastCount {
			t.Errorf("bucket le=%s = %v is below the previous bucket (not cumulative)", s.labels["le"], s.value)
		}
		lastCount = s.value
	}
	want := "0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10 30 60 120 300 +Inf"
	if got := strings.Join(les, " "); got != want {
		t.Fatalf("le buckets in order:\n got %s\nwant %s", got, want)
	}
}

func TestMetricsTargetGaugesFollowLiveState(t *testing.T) {
	p := upstream.NewPool()
	open := newTarget(t, p, "open", 1)
	half := newTarget(t, p, "half", 2)
	parked := newTarget(t, p, "parked", 3)
	busy := newTarget(t, p, "busy", 4)
	m := quietMetrics()
	now := time.Now()
	m.now = func() time.Time { return now }
	m.SetTargets([]*upstream.Target{open, half, parked, busy})

	fail := func(tg *upstream.Target, at time.Time) {
		for range 2 { // FailureThreshold 2
			tk, ok := tg.Breaker().Allow(at)
			if !ok {
				t.Fatalf("%s: breaker refused before it should open", tg.Name)
			}
			tg.Breaker().Done(tk, upstream.ClassServer, at)
		}
	}
	fail(open, now)
	fail(half, now.Add(-31*time.Second)) // opened 31s ago, timeout 30s: half-open now
	parked.Park().ParkUntil(now.Add(5 * time.Second))

	// busy: one slot taken, one waiter queued.
	if ok, _ := busy.Limiter().Acquire(now.Add(time.Minute), nil); !ok {
		t.Fatal("first Acquire refused")
	}
	cancel := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if ok, _ := busy.Limiter().Acquire(time.Now().Add(time.Minute), cancel); ok {
			busy.Limiter().Release()
		}
	}()
	for deadline := time.Now().Add(5 * time.Second); busy.Limiter().QueueDepth() != 1; {
		if time.Now().After(deadline) {
			t.Fatal("waiter never queued")
		}
		time.Sleep(time.Millisecond)
	}

	got := switchyardSeries(t, scrape(t, m))
	want := merge(fixedCounters(0, 0, 0),
		idleGauges("open"), idleGauges("half"), idleGauges("parked"), idleGauges("busy"),
		histogram("open"), histogram("half"), histogram("parked"), histogram("busy"),
		map[string]float64{
			key(famCircuit, "target", "open"):  2,
			key(famCircuit, "target", "half"):  1,
			key(famParked, "target", "parked"): 1,
			key(famInflight, "target", "busy"): 1,
			key(famQueue, "target", "busy"):    1,
			key(famParks, "target", "open"):    0,
			key(famParks, "target", "half"):    0,
			key(famParks, "target", "parked"):  0,
			key(famParks, "target", "busy"):    0,
		})
	diffSeries(t, got, want)

	close(cancel)
	<-done
	busy.Limiter().Release()

	// Time passes: the park expires and the open breaker turns half-open,
	// with no event in between (the gauges are computed at scrape time).
	now = now.Add(31 * time.Second)
	got = switchyardSeries(t, scrape(t, m))
	for k, v := range map[string]float64{
		key(famCircuit, "target", "open"):  1,
		key(famParked, "target", "parked"): 0,
		key(famInflight, "target", "busy"): 0,
		key(famQueue, "target", "busy"):    0,
	} {
		if got[k] != v {
			t.Errorf("after 31s: %s = %v, want %v", k, got[k], v)
		}
	}
}

func TestMetricsReloadRemovesTargetSeries(t *testing.T) {
	p := upstream.NewPool()
	a := newTarget(t, p, "a", 1)
	b := newTarget(t, p, "b", 2)
	m := quietMetrics()
	m.SetTargets([]*upstream.Target{a, b})
	m.Attempt(a, upstream.ClassOK, 200, time.Second)
	m.Attempt(b, upstream.ClassServer, 500, time.Second)
	m.Skip(a, upstream.ClassParked)
	m.Failover(a, upstream.ClassTimeout)
	m.StreamEnd(upstream.Result{Target: a}, time.Second)
	held := m.target("a") // what a request in flight on the old config may hold

	// A reload drops a; b is rebuilt (new *Target, same name) and keeps its
	// counts.
	b2 := newTarget(t, p, "b", 2)
	m.SetTargets([]*upstream.Target{b2})
	want := merge(fixedCounters(0, 0, 0), idleGauges("b"), histogram("b", 1),
		map[string]float64{
			key(famAttempts, "target", "b", "outcome", "server"): 1,
			key(famParks, "target", "b"):                         0,
		})
	got := switchyardSeries(t, scrape(t, m))
	diffSeries(t, got, want)
	for k := range got {
		if strings.Contains(k, `target="a"`) {
			t.Errorf("removed target still reported: %s", k)
		}
	}

	// A late event through series held from before the reload is dropped,
	// and registers nothing.
	m.classCounter(held, cfAttempts, upstream.ClassTimeout).Inc()
	diffSeries(t, switchyardSeries(t, scrape(t, m)), want)

	// A late event by name re-creates a's series (fresh counters) until the
	// next SetTargets removes them again.
	m.Attempt(a, upstream.ClassOK, 200, time.Second)
	got = switchyardSeries(t, scrape(t, m))
	if got[key(famAttempts, "target", "a", "outcome", "ok")] != 1 {
		t.Errorf("late attempt by name not counted afresh: %v", got[key(famAttempts, "target", "a", "outcome", "ok")])
	}
	if _, ok := got[key(famCircuit, "target", "a")]; ok {
		t.Error("a removed target got a circuit gauge back")
	}
	m.SetTargets([]*upstream.Target{b2})
	diffSeries(t, switchyardSeries(t, scrape(t, m)), want)

	// Adding a target back starts it from zero.
	m.SetTargets([]*upstream.Target{b2, a})
	got = switchyardSeries(t, scrape(t, m))
	diffSeries(t, got, merge(want, idleGauges("a"), histogram("a"), map[string]float64{key(famParks, "target", "a"): 0}))
}

func TestMetricsSetTargetsDeduplicatesAndIgnoresNil(t *testing.T) {
	p := upstream.NewPool()
	a := newTarget(t, p, "a", 1)
	a2 := newTarget(t, p, "a", 2)
	m := quietMetrics()
	m.SetTargets([]*upstream.Target{nil, a, a2})
	m.now = time.Now
	tk, _ := a2.Breaker().Allow(time.Now())
	a2.Breaker().Done(tk, upstream.ClassServer, time.Now())
	a2.Breaker().Done(tk, upstream.ClassServer, time.Now())
	got := switchyardSeries(t, scrape(t, m)) // parseExposition fails on a duplicate series
	if got[key(famCircuit, "target", "a")] != 0 {
		t.Errorf("duplicate name: the first target should be reported, got circuit %v", got[key(famCircuit, "target", "a")])
	}
}

func TestMetricsLabelEscaping(t *testing.T) {
	p := upstream.NewPool()
	names := []string{`quo"te`, `back\slash`, "new\nline", `trail\`, "bad\xffutf8", `a{b}=c,d`}
	var ts []*upstream.Target
	for i, n := range names {
		ts = append(ts, newTarget(t, p, n, i+1))
	}
	m := quietMetrics()
	m.SetTargets(ts)
	for _, tg := range ts {
		m.Attempt(tg, upstream.ClassOK, 200, time.Millisecond)
		m.Skip(tg, upstream.ClassParked)
	}
	text := scrape(t, m)
	got := switchyardSeries(t, text) // strict parse: escapes, one line per series
	for _, n := range names {
		want := strings.ToValidUTF8(n, "\uFFFD")
		for _, k := range []string{
			key(famAttempts, "target", want, "outcome", "ok"),
			key(famSkips, "target", want, "reason", "parked"),
			key(famCircuit, "target", want),
			key(famDuration+"_count", "target", want),
		} {
			if got[k] != 1 && !strings.HasPrefix(k, famCircuit) {
				t.Errorf("%s = %v, want 1", k, got[k])
			}
			if _, ok := got[k]; !ok {
				t.Errorf("missing %s", k)
			}
		}
	}
	for _, raw := range []string{
		`switchyard_parks_total{target="quo\"te"} 0`,
		`switchyard_parks_total{target="back\\slash"} 0`,
		`switchyard_parks_total{target="new\nline"} 0`,
		`switchyard_parks_total{target="trail\\"} 0`,
		`switchyard_inflight{target="quo\"te"} 0`,
		`switchyard_inflight{target="new\nline"} 0`,
	} {
		if !strings.Contains(string(text), raw+"\n") {
			t.Errorf("exposition lacks the line %s", raw)
		}
	}
}

func TestMetricsReloadSeries(t *testing.T) {
	m := quietMetrics()
	t0 := time.Unix(1700000000, 250*int64(time.Millisecond))
	hash1 := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	hash2 := "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

	m.Loaded(hash1, t0)
	diffSeries(t, switchyardSeries(t, scrape(t, m)), merge(fixedCounters(0, 0, 0), map[string]float64{
		key(famInfo, "hash", "0123456789ab"): 1,
		famReloadOK:                          1,
		famReloadTS:                          1700000000.25,
	}))

	// A failed reload: the old config keeps serving, so its hash stays.
	m.Reload(ReloadFailure, hash2, t0.Add(time.Minute))
	diffSeries(t, switchyardSeries(t, scrape(t, m)), merge(fixedCounters(0, 1, 0), map[string]float64{
		key(famInfo, "hash", "0123456789ab"): 1,
		famReloadOK:                          0,
		famReloadTS:                          1700000060.25,
	}))

	m.Reload(ReloadSuccess, hash2, t0.Add(2*time.Minute))
	m.Reload(ReloadUnchanged, hash2, t0.Add(3*time.Minute))
	diffSeries(t, switchyardSeries(t, scrape(t, m)), merge(fixedCounters(1, 1, 1), map[string]float64{
		key(famInfo, "hash", "fedcba987654"): 1,
		famReloadOK:                          1,
		famReloadTS:                          1700000180.25,
	}))

	// An unknown result is counted as a failure: the label stays bounded.
	m.Reload("bogus", "", t0.Add(4*time.Minute))
	got := switchyardSeries(t, scrape(t, m))
	if got[key(famReloads, "result", "failure")] != 2 || got[famReloadOK] != 0 {
		t.Errorf("unknown result: failures %v, last success %v", got[key(famReloads, "result", "failure")], got[famReloadOK])
	}
	if _, ok := got[key(famReloads, "result", "bogus")]; ok {
		t.Error("an unknown result became a label value")
	}
}

func TestMetricsHandler(t *testing.T) {
	p := upstream.NewPool()
	a := newTarget(t, p, "a", 1)
	m := NewMetrics() // with process and Go runtime series
	m.SetTargets([]*upstream.Target{a})
	m.Attempt(a, upstream.ClassOK, 200, time.Millisecond)
	m.Request(router.SurfaceChat, 200)

	var rc fasthttp.RequestCtx
	rc.Request.SetRequestURI("/metrics")
	m.Handler(&rc)
	if ct := string(rc.Response.Header.ContentType()); ct != ContentType {
		t.Errorf("Content-Type %q, want %q", ct, ContentType)
	}
	if rc.Response.StatusCode() != fasthttp.StatusOK {
		t.Errorf("status %d", rc.Response.StatusCode())
	}
	samples := parseExposition(t, rc.Response.Body()) // every line, runtime ones too
	names := map[string]bool{}
	for _, s := range samples {
		names[s.name] = true
	}
	for _, n := range []string{"go_memstats_mallocs_total", "go_goroutines", "process_cpu_seconds_total",
		"process_resident_memory_bytes", "switchyard_requests_total", famDuration + "_bucket"} {
		if !names[n] {
			t.Errorf("no %s series in /metrics", n)
		}
	}
}

func TestMetricsInstancesAreIndependent(t *testing.T) {
	p := upstream.NewPool()
	a := newTarget(t, p, "a", 1)
	m1, m2 := quietMetrics(), quietMetrics()
	m1.Attempt(a, upstream.ClassOK, 200, time.Millisecond)
	m1.Request(router.SurfaceChat, 200)
	got := switchyardSeries(t, scrape(t, m2))
	diffSeries(t, got, fixedCounters(0, 0, 0))
}

func TestMetricsConcurrentUse(t *testing.T) {
	p := upstream.NewPool()
	keep := newTarget(t, p, "keep", 1)
	churn := newTarget(t, p, "churn", 2)
	m := quietMetrics()
	m.SetTargets([]*upstream.Target{keep, churn})
	const workers, per = 4, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				m.Attempt(keep, upstream.Class(i%4), 200, time.Millisecond)
				m.Skip(churn, upstream.ClassParked)
				m.Request(router.Surface(w%4), 200)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 50 {
			if i%2 == 0 {
				m.SetTargets([]*upstream.Target{keep})
			} else {
				m.SetTargets([]*upstream.Target{keep, churn})
			}
			var sb strings.Builder
			m.WritePrometheus(&sb)
		}
	}()
	wg.Wait()
	got := switchyardSeries(t, scrape(t, m))
	total := 0.0
	for c := range 4 {
		total += got[key(famAttempts, "target", "keep", "outcome", upstream.Class(c).String())]
	}
	if total != workers*per {
		t.Errorf("attempts on a kept target: %v, want %d (an update was lost)", total, workers*per)
	}
	if got[key(famDuration+"_count", "target", "keep")] != workers*per {
		t.Errorf("histogram count %v, want %d", got[key(famDuration+"_count", "target", "keep")], workers*per)
	}
	reqs := 0.0
	for s := range router.NumSurfaces {
		reqs += got[key(famRequests, "surface", s.String(), "status", "200")]
	}
	if reqs != workers*per {
		t.Errorf("requests %v, want %d", reqs, workers*per)
	}
}
