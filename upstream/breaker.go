package upstream

import (
	"sync"
	"sync/atomic"
	"time"
)

// BreakerState is a circuit breaker state (docs/routing.md, 7).
type BreakerState uint8

// Breaker states. The zero value is BreakerClosed.
const (
	// BreakerClosed lets every call through and counts consecutive failures.
	BreakerClosed BreakerState = iota
	// BreakerOpen refuses every call until its timeout has passed.
	BreakerOpen
	// BreakerHalfOpen admits a bounded number of concurrent probes.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half_open" (metrics and logs).
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half_open"
	}
	return "unknown"
}

// BreakerSettings are a breaker's thresholds (config.CircuitBreaker).
// Values below 1 are treated as 1; a zero OpenTimeout means a call is let
// through (half-open) as soon as the breaker is asked after opening.
type BreakerSettings struct {
	// FailureThreshold is the consecutive counted failures that open a
	// closed breaker.
	FailureThreshold int
	// SuccessThreshold is the half-open successes that close it.
	SuccessThreshold int
	// MaxHalfOpen is the concurrent probes admitted while half-open.
	MaxHalfOpen int
	// OpenTimeout is how long the breaker stays open before half-open.
	OpenTimeout time.Duration
}

// Ticket is the admission a Breaker hands out in Allow; it must be handed
// back to Done exactly once. It carries the state generation that admitted
// the call, so an outcome that arrives after the breaker moved on (a slow
// stream ending after the breaker opened and closed again) changes nothing
// (gobreaker's afterRequest). Only a ticket returned with ok == true may be
// passed to Done.
type Ticket struct {
	word uint64
}

// Breaker is one target's circuit breaker. Safe for concurrent use.
//
// The state word packs the generation and the state (gen<<2 | state) in one
// atomic, bumped on every transition. Fast path (closed, success): Allow is
// one atomic load and Done at most one load and one store, no lock, no
// allocation. Slow path (a failure that opens, anything half-open or open
// past its timeout) takes mu; transitions happen under mu with the word
// re-checked, so two racing failures open the breaker once.
//
// Outcomes that are neither a success nor counted (429, context-length
// overflow, client 4xx, cancellation, saturation) are neutral: they neither
// count as a failure nor reset the consecutive-failure counter, because
// they say nothing about the target's health; only a success resets it.
// A neutral half-open probe frees its probe slot without deciding anything.
//
// Time is passed in (now), so there is no timer or goroutine: the move from
// open to half-open happens lazily in the first Allow after the timeout.
// The zero Breaker is closed with every threshold 1; use NewBreaker.
type Breaker struct {
	word     atomic.Uint64 // gen<<2 | state
	failures atomic.Int32  // consecutive counted failures while closed
	openedAt atomic.Int64  // UnixNano when it last opened

	failureThreshold atomic.Int32
	successThreshold atomic.Int32
	maxHalfOpen      atomic.Int32
	openTimeout      atomic.Int64 // nanoseconds

	mu        sync.Mutex
	probes    int32 // half-open probes in flight (under mu)
	successes int32 // half-open successes so far (under mu)
}

// NewBreaker returns a closed breaker with settings s.
func NewBreaker(s BreakerSettings) *Breaker {
	b := &Breaker{}
	b.word.Store(1 << 2) // generation 1, closed
	b.Update(s)
	return b
}

// Update applies new thresholds (a reload that keeps the target's
// identity). The state, its generation and the counts are kept: a closed
// breaker whose consecutive failures already reach a lowered threshold opens
// at its next counted failure; an open breaker uses the new timeout from
// the moment it opened; half-open probes in flight finish normally.
func (b *Breaker) Update(s BreakerSettings) {
	b.failureThreshold.Store(atLeast1(s.FailureThreshold))
	b.successThreshold.Store(atLeast1(s.SuccessThreshold))
	b.maxHalfOpen.Store(atLeast1(s.MaxHalfOpen))
	b.openTimeout.Store(max(int64(s.OpenTimeout), 0))
}

func atLeast1(n int) int32 {
	if n < 1 {
		return 1
	}
	if n > 1<<30 {
		return 1 << 30
	}
	return int32(n)
}

func stateOf(w uint64) BreakerState { return BreakerState(w & 3) }

// next returns the word of the next generation in state s.
func next(w uint64, s BreakerState) uint64 { return (w>>2+1)<<2 | uint64(s) }

// Allow asks whether a call may go to the target now. When ok, the caller
// must pass the ticket to Done once the call's outcome is known.
func (b *Breaker) Allow(now time.Time) (t Ticket, ok bool) {
	w := b.word.Load()
	switch stateOf(w) {
	case BreakerClosed:
		// Fast path.
		return Ticket{word: w}, true
	case BreakerOpen:
		if now.UnixNano() < b.openedAt.Load()+b.openTimeout.Load() {
			return Ticket{}, false
		}
	}
	// Slow path: open past its timeout, or half-open.
	b.mu.Lock()
	defer b.mu.Unlock()
	w = b.word.Load()
	switch stateOf(w) {
	case BreakerClosed:
		return Ticket{word: w}, true
	case BreakerOpen:
		if now.UnixNano() < b.openedAt.Load()+b.openTimeout.Load() {
			return Ticket{}, false
		}
		w = next(w, BreakerHalfOpen)
		b.word.Store(w)
		b.probes, b.successes = 0, 0
	}
	if b.probes >= b.maxHalfOpen.Load() {
		return Ticket{}, false
	}
	b.probes++
	return Ticket{word: w}, true
}

// Done reports the outcome of a call admitted by Allow. A ticket from an
// older generation is ignored.
func (b *Breaker) Done(t Ticket, c Class, now time.Time) {
	w := b.word.Load()
	if t.word != w {
		return // stale: the breaker moved on since this call was admitted
	}
	if stateOf(w) == BreakerClosed {
		switch {
		case c == ClassOK:
			// Fast path: a success resets the consecutive count; skip the
			// store when it is already zero to keep the cache line shared.
			if b.failures.Load() != 0 {
				b.failures.Store(0)
			}
		case c.Counted():
			if b.failures.Add(1) >= b.failureThreshold.Load() {
				b.mu.Lock()
				if b.word.Load() == w {
					b.open(w, now)
				}
				b.mu.Unlock()
			}
		}
		return
	}
	// Half-open probe outcome.
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.word.Load() != w {
		return
	}
	b.probes--
	switch {
	case c == ClassOK:
		b.successes++
		if b.successes >= b.successThreshold.Load() {
			b.failures.Store(0)
			b.word.Store(next(w, BreakerClosed))
		}
	case c.Counted():
		b.open(w, now)
	}
}

// open moves to the open state; b.mu must be held.
func (b *Breaker) open(w uint64, now time.Time) {
	b.openedAt.Store(now.UnixNano())
	b.failures.Store(0)
	b.word.Store(next(w, BreakerOpen))
}

// State reports the state as of now, for metrics: an open breaker whose
// timeout has passed reports half-open (it would admit a probe). It does
// not change the state.
func (b *Breaker) State(now time.Time) BreakerState {
	s := stateOf(b.word.Load())
	if s == BreakerOpen && now.UnixNano() >= b.openedAt.Load()+b.openTimeout.Load() {
		return BreakerHalfOpen
	}
	return s
}
