package admin

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/decisions"
	"github.com/switchyard/switchyard/telemetry"
)

// Recorder is what the hot path feeds for the console: the decision ring
// and per-key counters. Finished takes no lock and allocates nothing.
// Safe for concurrent use; create it with NewRecorder.
type Recorder struct {
	ring decisions.Ring
	// keys maps a client key's name ("" = requests without a key) to its
	// counters; replaced whole by SetKeys, read with one atomic load.
	keys atomic.Pointer[map[string]*keyCounters]
	mu   sync.Mutex // serializes SetKeys
}

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
}

// NewRecorder returns a Recorder counting the keys named.
func NewRecorder(keys []string) *Recorder {
	r := &Recorder{}
	r.SetKeys(keys)
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
	for _, n := range append([]string{""}, names...) {
		if c := old[n]; c != nil {
			m[n] = c
		} else {
			m[n] = &keyCounters{}
		}
	}
	r.keys.Store(&m)
}

// Finished records one answered request (hotpath.Gateway.Finished).
func (r *Recorder) Finished(e *telemetry.Entry) {
	now := time.Now()
	r.ring.Add(e, now)
	c := (*r.keys.Load())[e.Key]
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
