package admin

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/decisions"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/traffic"
)

// Recorder is what the hot path feeds for the console: the decision ring,
// per-key counters, and the last minutes of each key and target, second by
// second (docs/console.md, History). Finished takes no lock and allocates
// nothing. Safe for concurrent use; create it with NewRecorder.
type Recorder struct {
	ring decisions.Ring
	// keys maps a client key's name ("" = requests without a key) to its
	// counters; replaced whole by SetKeys, read with one atomic load.
	keys atomic.Pointer[map[string]*keyCounters]
	// targets maps a target's name to its history; replaced whole by
	// SetTargets.
	targets atomic.Pointer[map[string]*traffic.Series]
	mu      sync.Mutex // serializes SetKeys and SetTargets
	// clock is time.Now (a test sets the second requests end in).
	clock func() time.Time
}

// MaxHistories is how many keys, and how many targets, have a history
// (about 190 KB each): the first in the configuration's order. The others
// show their totals only.
const MaxHistories = 256

// keyCounters are one client key's totals since the process started.
type keyCounters struct {
	requests, errors   atomic.Int64
	prompt, completion atomic.Int64
	// cacheRead and cacheWrite are the parts of prompt read from and
	// written to the providers' prompt caches.
	cacheRead, cacheWrite atomic.Int64
	lastSeen              atomic.Int64 // Unix nanoseconds; 0 = never
	spend                 atomic.Int64 // micro-USD of priced answers
	priced                atomic.Bool  // an answer was priced
	// history is the key's last minutes; nil past MaxHistories keys.
	history *traffic.Series
}

// NewRecorder returns a Recorder counting the keys named.
func NewRecorder(keys []string) *Recorder {
	r := &Recorder{clock: time.Now}
	r.SetKeys(keys)
	r.SetTargets(nil)
	return r
}

// SetKeys sets the client keys counted (call after each reload): a key
// kept by name keeps its counters; "" (requests without a key) is always
// counted.
func (r *Recorder) SetKeys(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := map[string]*keyCounters{}
	if p := r.keys.Load(); p != nil {
		old = *p
	}
	m := make(map[string]*keyCounters, len(names)+1)
	now := time.Now()
	for i, n := range append([]string{""}, names...) {
		c := old[n]
		if c == nil {
			c = &keyCounters{}
		}
		if c.history == nil && i <= MaxHistories {
			c.history = traffic.New(now)
		}
		m[n] = c
	}
	r.keys.Store(&m)
}

// SetTargets sets the targets whose history is kept (call after each
// reload, in the configuration's order): a target kept by name keeps its
// history.
func (r *Recorder) SetTargets(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := map[string]*traffic.Series{}
	if p := r.targets.Load(); p != nil {
		old = *p
	}
	m := make(map[string]*traffic.Series, len(names))
	now := time.Now()
	for i, n := range names {
		if h := old[n]; h != nil {
			m[n] = h
		} else if i < MaxHistories {
			m[n] = traffic.New(now)
		}
	}
	r.targets.Store(&m)
}

// Finished records one answered request (hotpath.Gateway.Finished).
func (r *Recorder) Finished(e *telemetry.Entry) {
	now := r.clock()
	r.ring.Add(e, now)
	c := (*r.keys.Load())[e.Key]
	r.record(e, c, now.Unix())
	if c == nil {
		return // a key removed by a reload while its request ran
	}
	c.requests.Add(1)
	if e.Status >= 400 {
		c.errors.Add(1)
	}
	if e.Usage.HasPrompt {
		c.prompt.Add(e.Usage.Prompt)
		if e.Usage.CacheRead != 0 {
			c.cacheRead.Add(e.Usage.CacheRead)
		}
		if e.Usage.CacheWrite != 0 {
			c.cacheWrite.Add(e.Usage.CacheWrite)
		}
	}
	if e.Usage.HasCompletion {
		c.completion.Add(e.Usage.Completion)
	}
	if e.HasSpend {
		c.spend.Add(e.Spend)
		if !c.priced.Load() {
			c.priced.Store(true)
		}
	}
	c.lastSeen.Store(now.UnixNano())
}

// Ring returns the decision ring.
func (r *Recorder) Ring() *decisions.Ring { return &r.ring }
