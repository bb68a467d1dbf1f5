package quota

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// refBucket is the plain token bucket the GCRA must equal: a level in
// exact rationals, refilled continuously at limit per 60 s, capped at limit.
type refBucket struct {
	limit int64
	level *big.Rat
	last  time.Time
}

func (b *refBucket) refill(now time.Time) {
	if now.After(b.last) {
		add := new(big.Rat).SetFrac64(int64(now.Sub(b.last))*b.limit, int64(60*time.Second))
		b.level.Add(b.level, add)
		if c := new(big.Rat).SetInt64(b.limit); b.level.Cmp(c) > 0 {
			b.level = c
		}
		b.last = now
	}
}

func (b *refBucket) take(n int64, now time.Time) bool {
	b.refill(now)
	c := new(big.Rat).SetInt64(min(n, b.limit))
	if b.level.Cmp(c) < 0 {
		return false
	}
	b.level.Sub(b.level, c)
	return true
}

func (b *refBucket) adjust(delta int64, now time.Time) {
	b.refill(now)
	b.level.Sub(b.level, new(big.Rat).SetInt64(delta))
	if c := new(big.Rat).SetInt64(b.limit); b.level.Cmp(c) > 0 {
		b.level = c
	}
}

// refBudget is a calendar budget as a map from window to units used.
type refBudget struct {
	limit   int64
	monthly bool
	used    map[int64]int64
}

func (b *refBudget) window(t time.Time) int64 {
	u := t.UTC()
	if b.monthly {
		return int64(u.Year())*12 + int64(u.Month()) - 1
	}
	return time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC).Unix() / 86400
}

func (b *refBudget) take(n int64, now time.Time) bool {
	w := b.window(now)
	c := min(n, b.limit)
	if b.used[w]+c > b.limit || (c == 0 && b.used[w] >= b.limit) {
		return false
	}
	b.used[w] += c
	return true
}

// TestArithmeticMatchesReferenceModel drives the memory store's counters
// and the reference models with the same random arrivals, costs and
// settlements on a simulated clock that crosses midnight UTC, month ends
// (a leap February and a year end included), and compares every decision
// and every level.
func TestArithmeticMatchesReferenceModel(t *testing.T) {
	starts := []time.Time{
		time.Date(2026, 1, 31, 23, 58, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 23, 59, 0, 0, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 30, 0, time.UTC),
		time.Date(2026, 6, 30, 23, 59, 50, 0, time.UTC),
	}
	// Limits dividing 60 s in ns exactly, so the reference's rationals and
	// the bucket's nanoseconds agree to the last unit.
	limits := []int64{1, 2, 3, 5, 10, 12, 60, 100, 120, 600, 1000, 10000}
	for seed := uint64(1); seed <= 24; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7))
		start := starts[int(seed)%len(starts)]
		lim := limits[rng.IntN(len(limits))]
		var c counters
		limArr := [NumKinds]int64{RequestsPerMinute: lim, TokensPerMinute: lim * 10, TokensPerDay: lim * 20, SpendPerDay: lim * 5, SpendPerMonth: lim * 40}
		kinds := []Kind{RequestsPerMinute, TokensPerMinute, TokensPerDay, SpendPerDay, SpendPerMonth}
		rpm := &refBucket{limit: limArr[RequestsPerMinute], level: new(big.Rat).SetInt64(limArr[RequestsPerMinute]), last: start}
		tpm := &refBucket{limit: limArr[TokensPerMinute], level: new(big.Rat).SetInt64(limArr[TokensPerMinute]), last: start}
		tpd := &refBudget{limit: limArr[TokensPerDay], used: map[int64]int64{}}
		spd := &refBudget{limit: limArr[SpendPerDay], used: map[int64]int64{}}
		spm := &refBudget{limit: limArr[SpendPerMonth], monthly: true, used: map[int64]int64{}}
		now := start
		type open struct {
			r      Reservation
			tokens int64
			at     time.Time
		}
		var held []open
		for step := 0; step < 1500; step++ {
			now = now.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
			switch rng.IntN(3) {
			case 0, 1: // an arrival
				tokens := int64(rng.IntN(int(lim*12) + 1))
				var r Reservation
				reserveMem(&c, &limArr, kinds, tokens, now, &r)
				// The reference, all or nothing in kind order.
				snap := []*refBucket{cloneBucket(rpm), cloneBucket(tpm)}
				snapB := []map[int64]int64{cloneMap(tpd.used), cloneMap(spd.used), cloneMap(spm.used)}
				want := rpm.take(1, now) && tpm.take(tokens, now) && tpd.take(tokens, now) && spd.take(0, now) && spm.take(0, now)
				if !want {
					*rpm, *tpm = *snap[0], *snap[1]
					tpd.used, spd.used, spm.used = snapB[0], snapB[1], snapB[2]
					// a failed take still refilled: keep the refill
					rpm.refill(now)
					tpm.refill(now)
				}
				if r.OK != want {
					t.Fatalf("seed %d step %d at %s: store admitted=%v, reference %v (tokens %d, limit %d)", seed, step, now, r.OK, want, tokens, lim)
				}
				if r.OK {
					held = append(held, open{r, tokens, now})
				}
			default: // a settlement of a random open reservation
				if len(held) == 0 {
					continue
				}
				i := rng.IntN(len(held))
				o := held[i]
				held = append(held[:i], held[i+1:]...)
				refund := rng.IntN(4) == 0
				used := int64(rng.IntN(int(lim*15) + 1))
				spend := int64(rng.IntN(int(lim) + 1))
				if rng.IntN(5) == 0 {
					used = -1 // no usage reported: the reservation stands
				}
				settleMem(&c, &limArr, kinds, &o.r, used, spend, refund, now)
				// The reference applies the same deltas.
				for _, k := range kinds {
					full := settled(k, used, spend, refund)
					if full < 0 {
						continue
					}
					delta := full - o.r.held[k]
					switch k {
					case RequestsPerMinute:
						rpm.adjust(delta, now)
					case TokensPerMinute:
						tpm.adjust(delta, now)
					default:
						b := map[Kind]*refBudget{TokensPerDay: tpd, SpendPerDay: spd, SpendPerMonth: spm}[k]
						wRes, wNow := b.window(o.at), b.window(now)
						add := delta
						if wRes != wNow {
							add = full
						}
						b.used[wNow] = min(max(b.used[wNow]+add, 0), usedMax)
					}
				}
			}
			// Levels agree after every step.
			room := roomMem(&c, &limArr, kinds, now)
			for k, rb := range map[Kind]*refBucket{RequestsPerMinute: rpm, TokensPerMinute: tpm} {
				rb.refill(now)
				want := new(big.Int).Quo(rb.level.Num(), rb.level.Denom()).Int64()
				if rb.level.Sign() < 0 {
					want = 0
				}
				if room[k] != want {
					t.Fatalf("seed %d step %d: %s room %d, reference %s", seed, step, k, room[k], rb.level.FloatString(3))
				}
			}
			for k, b := range map[Kind]*refBudget{TokensPerDay: tpd, SpendPerDay: spd, SpendPerMonth: spm} {
				if want := b.limit - b.used[b.window(now)]; room[k] != want {
					t.Fatalf("seed %d step %d at %s: %s room %d, reference %d", seed, step, now, k, room[k], want)
				}
			}
		}
	}
}

func cloneBucket(b *refBucket) *refBucket {
	return &refBucket{limit: b.limit, level: new(big.Rat).Set(b.level), last: b.last}
}

func cloneMap(m map[int64]int64) map[int64]int64 {
	out := make(map[int64]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestWindows checks the day and month numbers and window ends at the
// boundaries the budgets reset on.
func TestWindows(t *testing.T) {
	for _, c := range []struct {
		at         time.Time
		day, month int64
		dayEnd     time.Duration
		monthEnd   time.Duration
	}{
		{time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC), 20484, 2026*12 + 0, time.Second, time.Second},
		{time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), 20485, 2026*12 + 1, 24 * time.Hour, 28 * 24 * time.Hour},
		{time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC), 19782, 2024*12 + 1, 12 * time.Hour, 12 * time.Hour},
		// A time in another zone is the same instant: windows are UTC.
		{time.Date(2026, 3, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)), 20512, 2026*12 + 1, 30 * time.Minute, 30 * time.Minute},
	} {
		d, m := windows(c.at)
		if d != c.day || m != c.month {
			t.Errorf("%s: windows %d, %d; want %d, %d", c.at, d, m, c.day, c.month)
		}
		if got := windowEnd(c.at, TokensPerDay); got != c.dayEnd {
			t.Errorf("%s: day ends in %s; want %s", c.at, got, c.dayEnd)
		}
		if got := windowEnd(c.at, SpendPerMonth); got != c.monthEnd {
			t.Errorf("%s: month ends in %s; want %s", c.at, got, c.monthEnd)
		}
	}
}

// TestWindowsMatchCalendar: the integer calendar agrees with time.Date on
// every day from 1970 to 2200.
func TestWindowsMatchCalendar(t *testing.T) {
	for d := time.Date(1970, 1, 1, 12, 0, 0, 0, time.UTC); d.Year() < 2200; d = d.AddDate(0, 0, 1) {
		day, month := windows(d)
		y, m, _ := d.Date()
		if day != d.Unix()/86400 || month != int64(y)*12+int64(m)-1 {
			t.Fatalf("%s: windows %d, %d", d, day, month)
		}
	}
}
