package load

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: 2^subBits buckets per power of
// two, so a recorded value is off by at most 1/2^subBits (0.8%).
const subBits = 7

const (
	subCount   = 1 << subBits
	numBuckets = (64 - subBits) * subCount
)

// Histogram records durations in log-linear buckets (HDR-histogram style):
// exact below 256 ns, then 128 buckets per power of two, so a quantile is
// within 0.8% of the true value, in fixed memory (57 KiB). Not safe for
// concurrent use: give each goroutine its own and Merge them.
type Histogram struct {
	counts   []uint64
	n        uint64
	min, max int64
}

// NewHistogram returns an empty Histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]uint64, numBuckets), min: math.MaxInt64}
}

func bucketOf(v int64) int {
	if v < 2*subCount {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - (subBits + 1)
	return (shift+1)<<subBits + int(v>>shift) - subCount
}

// bucketHigh is the largest value that falls in bucket i.
func bucketHigh(i int) int64 {
	if i < 2*subCount {
		return int64(i)
	}
	shift := i>>subBits - 1
	sub := int64(i&(subCount-1)) + subCount
	return (sub+1)<<shift - 1
}

// Record adds one observation; negative durations count as 0.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)]++
	h.n++
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// Merge adds o's observations to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Count is the number of observations.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile returns the value below or at which a fraction q (0..1) of the
// observations fall: the upper bound of the bucket holding the q-th
// observation, clamped to the observed range. 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := min(max(bucketHigh(i), h.min), h.max)
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}
