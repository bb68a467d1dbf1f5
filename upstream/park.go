package upstream

import (
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/internal/byteconv"
)

// Park holds a target out of rotation after a 429 (docs/routing.md, 8). It stores
// one deadline; being parked is "now is before the deadline", checked
// lazily, with no timer. The zero Park is not parked. Safe for concurrent
// use; Parked is one atomic load and allocates nothing.
type Park struct {
	until atomic.Int64 // UnixNano; 0 = never parked
}

// ParkUntil parks the target until deadline. A later deadline wins over an
// earlier one: two racing 429s leave the longer park in place.
func (p *Park) ParkUntil(deadline time.Time) {
	d := deadline.UnixNano()
	for {
		cur := p.until.Load()
		if d <= cur || p.until.CompareAndSwap(cur, d) {
			return
		}
	}
}

// Parked reports whether the target is parked at now.
func (p *Park) Parked(now time.Time) bool {
	return now.UnixNano() < p.until.Load()
}

// Remaining returns how long the target stays parked after now (0 when it
// is not parked).
func (p *Park) Remaining(now time.Time) time.Duration {
	return max(time.Duration(p.until.Load()-now.UnixNano()), 0)
}

// Park durations (docs/routing.md, 8).
const (
	// MaxPark caps a park taken from Retry-After.
	MaxPark = 60 * time.Second
	// DefaultPark is the park when a 429 has no usable Retry-After.
	DefaultPark = 5 * time.Second
	// MaxRetryAfterBackoff caps a Retry-After used as a retry backoff.
	MaxRetryAfterBackoff = 30 * time.Second
)

// ParseRetryAfter parses a Retry-After header value: delay-seconds (a
// non-negative integer) or an HTTP-date (RFC 9110 IMF-fixdate, also the
// obsolete RFC 850 and asctime forms). A date in the past gives 0. ok is
// false when v is empty or not one of these forms. The result is not capped.
func ParseRetryAfter(v []byte, now time.Time) (d time.Duration, ok bool) {
	v = byteconv.TrimOWS(v)
	if len(v) == 0 {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		var n int64
		for _, c := range v {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int64(c-'0')
			if n > 1<<31 {
				n = 1 << 31 // far beyond any cap; avoid overflow
			}
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := time.Parse(time.RFC1123, string(v)) // http.TimeFormat is RFC1123 with GMT
	if err != nil {
		t, err = time.Parse(time.RFC850, string(v))
	}
	if err != nil {
		t, err = time.Parse(time.ANSIC, string(v))
	}
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// ParkDuration returns how long a 429 with Retry-After value v parks its
// target: the header's delay capped at MaxPark, or DefaultPark when the
// header is absent or unparsable.
func ParkDuration(v []byte, now time.Time) time.Duration {
	d, ok := ParseRetryAfter(v, now)
	if !ok {
		return DefaultPark
	}
	return min(d, MaxPark)
}
