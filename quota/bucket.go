package quota

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The arithmetic of one counter, shared by the memory store and, as the
// same formulas in Lua, the Redis store.
//
// A rate is a token bucket kept as one number, its "theoretical arrival
// time" (GCRA): tat is when the bucket would be full again. Taking c units
// moves tat on by c × 60 s / limit; the bucket has room while tat stays
// within 60 s of now. So capacity = limit and refill = limit per 60 s,
// continuously, and one CompareAndSwap updates it.
//
// A budget is one number too: the window (day or month since the epoch,
// UTC) in the high bits and the units used in it in the low usedBits.

// rateWindow is the refill period of every rate.
const rateWindow = int64(60 * time.Second)

// usedBits is how many low bits of a budget hold the units used.
const (
	usedBits = 44
	usedMax  = 1<<usedBits - 1
)

// unitsNS returns units × 60 s / limit in nanoseconds, rounded up; units >= 0.
func unitsNS(units, limit int64) int64 {
	if units <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(units), uint64(rateWindow))
	if hi >= uint64(limit) {
		return math.MaxInt64 / 4
	}
	q, r := bits.Div64(hi, lo, uint64(limit))
	if r != 0 {
		q++
	}
	if q > math.MaxInt64/4 {
		return math.MaxInt64 / 4
	}
	return int64(q)
}

// bucketTake takes min(cost, limit) units from the bucket a at now (Unix
// ns). ok: taken, tat is the new value. !ok: wait is how long until it
// would fit.
func bucketTake(a *atomic.Int64, limit, cost, now int64) (ok bool, tat, wait int64) {
	inc := unitsNS(min(cost, limit), limit)
	for {
		old := a.Load()
		t := max(old, now) + inc
		if t-now > rateWindow {
			return false, old, t - now - rateWindow
		}
		if a.CompareAndSwap(old, t) {
			return true, t, 0
		}
	}
}

// bucketAdjust charges delta units (refunds -delta) to the bucket a at now:
// a charge may leave it in debt (the key then waits for the refill); a
// refund never fills it past its capacity.
func bucketAdjust(a *atomic.Int64, limit, delta, now int64) {
	if delta == 0 {
		return
	}
	for {
		old := a.Load()
		var t int64
		if delta > 0 {
			t = max(old, now) + unitsNS(delta, limit)
		} else {
			t = max(old-unitsNS(-delta, limit), now)
			if old <= now {
				return // already full
			}
		}
		if a.CompareAndSwap(old, t) {
			return
		}
	}
}

// bucketRoom returns the units the bucket holds at now and the time until
// it is full again.
func bucketRoom(tat, limit, now int64) (room int64, full time.Duration) {
	if tat <= now {
		return limit, 0
	}
	used := tat - now
	if used >= rateWindow {
		return 0, time.Duration(used)
	}
	hi, lo := bits.Mul64(uint64(rateWindow-used), uint64(limit))
	q, _ := bits.Div64(hi, lo, uint64(rateWindow))
	return int64(q), time.Duration(used)
}

// budgetTake reserves min(cost, limit) units of the budget a in window w:
// it fits while used + that <= limit (a spend budget, cost 0: while used <
// limit). used is the units used after taking.
func budgetTake(a *atomic.Int64, limit, cost, w int64) (ok bool, used int64) {
	c := min(cost, limit)
	for {
		old := a.Load()
		u := old & usedMax
		if old>>usedBits != w {
			u = 0
		}
		if u+c > limit || (c == 0 && u >= limit) {
			return false, u
		}
		if a.CompareAndSwap(old, w<<usedBits|(u+c)) {
			return true, u + c
		}
	}
}

// budgetAdjust applies a settlement to the budget a: delta units when the
// current window wNow is still the reservation's window wRes, else the
// settled total full, counted in the new window (a request that spanned
// midnight is charged to the day it ended). Used stays in [0, usedMax].
func budgetAdjust(a *atomic.Int64, wRes, wNow, delta, full int64) {
	add := delta
	if wNow != wRes {
		add = full
	}
	if add == 0 {
		return
	}
	for {
		old := a.Load()
		u := old & usedMax
		if old>>usedBits != wNow {
			u = 0
		}
		u = min(max(u+add, 0), usedMax)
		if a.CompareAndSwap(old, wNow<<usedBits|u) {
			return
		}
	}
}

// budgetUsed returns the units used of budget value v in window w.
func budgetUsed(v, w int64) int64 {
	if v>>usedBits != w {
		return 0
	}
	return v & usedMax
}

// windows returns the day and month numbers of t (UTC): days since the Unix
// epoch, and year × 12 + month − 1. Integer arithmetic only (the civil
// calendar from days, as the Redis script computes it): no time.Date.
func windows(t time.Time) (day, month int64) {
	day = floorDiv(t.Unix(), 86400)
	z := day + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	m := mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return day, y*12 + m - 1
}

// windowEnd returns how long from t until window w of kind k ends.
func windowEnd(t time.Time, k Kind) time.Duration {
	u := t.UTC()
	var end time.Time
	if k.monthly() {
		end = time.Date(u.Year(), u.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	} else {
		end = time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC)
	}
	return end.Sub(t)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
