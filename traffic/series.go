// Package traffic keeps the last minutes of one target's or one client
// key's requests, second by second, for the operator's console
// (docs/console.md, History): requests, errors, tokens and a latency
// histogram per second. The request path records into a fixed ring of
// atomic words without a lock or an allocation; the console sums the
// seconds it shows and computes percentiles on its own time.
package traffic

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Seconds is the ring's number of one-second slots: a little more than
// MaxWindow, so a window of MaxWindow whole seconds is always held while
// the current second is being written.
const Seconds = 1024

// MaxWindow is the longest window a reader can ask for, in seconds.
const MaxWindow = 900

// resetting marks a slot whose counters a writer is clearing for a new
// second.
const resetting = 1 << 62

// slot is one second of one series. Every field is an atomic; sec says
// which second the counters hold.
type slot struct {
	// sec is the Unix second counted; 0 = never written; sec|resetting
	// while a writer clears the counters for it.
	sec      atomic.Int64
	requests atomic.Uint32
	errors   atomic.Uint32
	tokens   atomic.Uint64
	latency  [Buckets]atomic.Uint32
}

// Series is the last Seconds seconds of one target or key. It must not be
// copied; create it with New. Record is safe for concurrent use with
// itself and with readers.
type Series struct {
	// born is the Unix second the series was created: seconds before it
	// hold no data (not zero traffic).
	born  int64
	lost  atomic.Uint64
	slots [Seconds]slot
}

// New returns an empty series created at now (about 188 KB).
func New(now time.Time) *Series { return &Series{born: now.Unix()} }

// Record counts one request that ended in Unix second sec: its latency,
// whether it failed and the tokens it used. It takes no lock and allocates
// nothing. The first Record of a second clears that second's slot; a
// request that arrives in the few nanoseconds another writer is clearing
// it is not counted (Lost).
func (s *Series) Record(sec int64, latency time.Duration, failed bool, tokens int64) {
	sl := &s.slots[uint64(sec)%Seconds]
	// Fast path: the slot holds this second already.
	if sl.sec.Load() != sec && !sl.claim(sec) {
		s.lost.Add(1)
		return
	}
	sl.requests.Add(1)
	if failed {
		sl.errors.Add(1)
	}
	if tokens > 0 {
		sl.tokens.Add(uint64(tokens))
	}
	sl.latency[Bucket(latency)].Add(1)
}

// claim makes the slot hold second sec, clearing what it held; false when
// it cannot now (another writer is clearing it, or it holds a later
// second: sec is over Seconds old).
func (sl *slot) claim(sec int64) bool {
	old := sl.sec.Load()
	if old == sec {
		return true
	}
	if old&resetting != 0 || old > sec || !sl.sec.CompareAndSwap(old, sec|resetting) {
		return sl.sec.Load() == sec
	}
	sl.requests.Store(0)
	sl.errors.Store(0)
	sl.tokens.Store(0)
	for i := range sl.latency {
		sl.latency[i].Store(0)
	}
	sl.sec.Store(sec)
	return true
}

// Lost returns how many requests were not counted (see Record).
func (s *Series) Lost() uint64 { return s.lost.Load() }

// Buckets is the number of latency buckets. Their bounds in milliseconds
// are 0, 0.5, 1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, …: each octave from 1 ms
// in two, the second half-open bucket [1.5·2ⁿ, 2ⁿ⁺¹); the last bucket
// holds everything from 393 s.
const Buckets = 40

// bucketUnit is the width of bucket 1, the unit of the bounds.
const bucketUnit = 500 * time.Microsecond

// Bucket returns the latency bucket of d. Allocation-free, no division
// beyond one by a constant.
func Bucket(d time.Duration) int {
	if d < bucketUnit {
		return 0
	}
	v := uint64(d / bucketUnit) // ≥ 1
	n := bits.Len64(v) - 1      // v in [2ⁿ, 2ⁿ⁺¹)
	if n == 0 {
		return 1
	}
	half := int(v>>(n-1)) & 1 // v ≥ 1.5·2ⁿ
	return min(2*n+half, Buckets-1)
}

// BucketLow returns the lower bound of bucket i; BucketLow(Buckets) is
// the upper bound of the last but one.
func BucketLow(i int) time.Duration {
	switch {
	case i <= 0:
		return 0
	case i == 1:
		return bucketUnit
	}
	n, half := i/2, i%2
	v := time.Duration(1) << n
	if half == 1 {
		v += v / 2
	}
	return v * bucketUnit
}
