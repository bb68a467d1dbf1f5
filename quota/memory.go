package quota

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// counters are one subject's counters in one Memory store: per kind, a
// bucket's tat (Unix ns) or a budget's packed window and units used.
// Fields are accessed atomically.
type counters struct {
	c [NumKinds]atomic.Int64
	// lim[k] is the limit a rate's tat was last computed for: when a
	// reload changes the limit, the bucket is rescaled so it keeps the
	// units it owes, not the time (see rescale).
	lim [NumKinds]atomic.Int64
}

// rescale converts rate k's bucket to limit lim at now: a bucket owing d
// units at the old limit owes d units at the new one.
func (c *counters) rescale(k Kind, lim, now int64) {
	old := c.lim[k].Swap(lim)
	if old == 0 || old == lim {
		return
	}
	for {
		tat := c.c[k].Load()
		if tat <= now {
			return
		}
		// (tat-now) × old / 60 s units are owed; at lim they take
		// (tat-now) × old / lim of time.
		hi, lo := bits.Mul64(uint64(tat-now), uint64(old))
		if hi >= uint64(lim) {
			return
		}
		d, _ := bits.Div64(hi, lo, uint64(lim))
		if c.c[k].CompareAndSwap(tat, now+int64(min(d, uint64(rateWindow)*2))) {
			return
		}
	}
}

// Memory is the in-process store: counters by subject, shared by every
// Plan built on it, so a reload that keeps a name keeps its counters. A
// check is a few CompareAndSwaps with no lock and no allocation; the lock
// guards only the map, used when a Plan is built. Memory is bounded by
// the configured keys and targets (Prune drops the others).
type Memory struct {
	mu   sync.Mutex
	byID map[string]*counters
}

// NewMemory returns an empty memory store.
func NewMemory() *Memory { return &Memory{byID: map[string]*counters{}} }

// counters returns the counters of subject id, creating them.
func (m *Memory) counters(id string) *counters {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.byID[id]
	if !ok {
		c = &counters{}
		m.byID[id] = c
	}
	return c
}

// prune drops the counters of subjects not in keep.
func (m *Memory) prune(keep map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.byID {
		if !keep[id] {
			delete(m.byID, id)
		}
	}
}

// source is the store a Reservation was taken from.
type source uint8

const (
	srcNone   source = iota // nothing taken (no limits, or allow on failure)
	srcMemory               // the memory store
	srcLocal                // the local fallback while the shared store is down
	srcRedis                // the shared store
)

// Reservation is what one check took from one subject, until it is
// settled or refunded. The zero value holds nothing.
type Reservation struct {
	// OK reports that the request fits (and the units are taken).
	OK bool
	// Unavailable: the store failed and on_store_failure is deny.
	Unavailable bool
	// Denied is the limit that refused, when !OK and !Unavailable.
	Denied Kind
	// TooLarge: the request reserves more than Denied's whole capacity,
	// so it can never fit (no RetryAfter); Requested is that reservation.
	// Nothing was asked of the store.
	TooLarge  bool
	Requested int64
	// RetryAfter is how long until the request would fit, when !OK.
	RetryAfter time.Duration
	// Remaining and Reset are, for the rates (RequestsPerMinute,
	// TokensPerMinute), the units left after this check and the time until
	// the bucket is full: for the x-ratelimit-* headers.
	Remaining [2]int64
	Reset     [2]time.Duration

	// budgetRoom is what each budget had left after a Redis check.
	budgetRoom [NumKinds]int64
	held       [NumKinds]int64
	day, month int64
	src        source
}

// cost returns what a request reserving tokens takes of kind k.
func cost(k Kind, tokens int64) int64 {
	switch k {
	case RequestsPerMinute:
		return 1
	case TokensPerMinute, TokensPerDay:
		return tokens
	}
	return 0 // spend is charged when known; the check is used < limit
}

// reserveMem checks and takes every limit of kinds from c (limits lim) at
// now; on a refusal it gives back what it took. Allocation-free.
func reserveMem(c *counters, lim *[NumKinds]int64, kinds []Kind, tokens int64, now time.Time, r *Reservation) {
	ns := now.UnixNano()
	r.day, r.month = windows(now)
	for i, k := range kinds {
		n := cost(k, tokens)
		a := &c.c[k]
		if k.Rate() {
			if c.lim[k].Load() != lim[k] {
				c.rescale(k, lim[k], ns)
			}
			ok, tat, wait := bucketTake(a, lim[k], n, ns)
			if !ok {
				r.deny(k, time.Duration(wait))
				undoMem(c, lim, kinds[:i], r, ns)
				return
			}
			r.held[k] = min(n, lim[k])
			r.Remaining[k], r.Reset[k] = bucketRoom(tat, lim[k], ns)
			continue
		}
		w := r.window(k)
		ok, _ := budgetTake(a, lim[k], n, w)
		if !ok {
			r.deny(k, windowEnd(now, k))
			undoMem(c, lim, kinds[:i], r, ns)
			return
		}
		r.held[k] = min(n, lim[k])
	}
	r.OK = true
}

func (r *Reservation) deny(k Kind, wait time.Duration) {
	r.OK, r.Denied, r.RetryAfter = false, k, wait
}

func (r *Reservation) window(k Kind) int64 {
	if k.monthly() {
		return r.month
	}
	return r.day
}

// undoMem gives back what r holds of kinds.
func undoMem(c *counters, lim *[NumKinds]int64, kinds []Kind, r *Reservation, ns int64) {
	for _, k := range kinds {
		if k.Rate() {
			bucketAdjust(&c.c[k], lim[k], -r.held[k], ns)
		} else {
			budgetAdjust(&c.c[k], r.window(k), r.window(k), -r.held[k], 0)
		}
		r.held[k] = 0
	}
}

// settleMem settles r: tokens and spend (micro-USD) are what the answer
// used (tokens < 0: none reported, the tokens reserved stand); refund gives
// everything back instead.
func settleMem(c *counters, lim *[NumKinds]int64, kinds []Kind, r *Reservation, tokens, spend int64, refund bool, now time.Time) {
	ns := now.UnixNano()
	day, month := windows(now)
	for _, k := range kinds {
		full := settled(k, tokens, spend, refund)
		if full < 0 {
			continue // no usage reported: the reservation stands
		}
		delta := full - r.held[k]
		if k.Rate() {
			bucketAdjust(&c.c[k], lim[k], delta, ns)
			continue
		}
		wNow := day
		if k.monthly() {
			wNow = month
		}
		budgetAdjust(&c.c[k], r.window(k), wNow, delta, full)
	}
}

// settled is what a finished request counts of kind k.
func settled(k Kind, tokens, spend int64, refund bool) int64 {
	if refund {
		return 0
	}
	switch k {
	case RequestsPerMinute:
		return 1
	case TokensPerMinute, TokensPerDay:
		return tokens
	}
	return spend
}

// roomMem reads, without taking anything, what c holds of each kind at now:
// for a rate the units left, for a budget the units left in the window.
func roomMem(c *counters, lim *[NumKinds]int64, kinds []Kind, now time.Time) (room [NumKinds]int64) {
	ns := now.UnixNano()
	day, month := windows(now)
	for _, k := range kinds {
		v := c.c[k].Load()
		if k.Rate() {
			room[k], _ = bucketRoom(v, lim[k], ns)
			continue
		}
		w := day
		if k.monthly() {
			w = month
		}
		room[k] = lim[k] - budgetUsed(v, w)
	}
	return room
}
