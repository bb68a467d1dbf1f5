//go:build !race

package quota

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/quota/redistest"
)

// TestRedisCheckAllocs: a check on the Redis store allocates only
// rueidis's reply (the arguments are the subject's, prepared with the
// plan, in an array on the stack; the deadline is pooled). It was 11 to
// 16 (context.WithTimeout, argument slices, strconv on every limit). The
// settlement loop's few allocations are per batch, not per request.
func TestRedisCheckAllocs(t *testing.T) {
	srv := redistest.Start(t)
	q, p, _ := redisQuotas(t, srv.URL(), "", "      limits: {requests_per_minute: 1000000000, tokens_per_minute: 1000000000000, tokens_per_day: 1000000000000, spend_per_day_usd: 1000000, spend_per_month_usd: 1000000}")
	s := p.Key("acme")
	check(p, "acme") // loads the script
	waitSettled(t, q)
	now := time.Now()
	// rueidis opens its pipelined connections lazily and sends each call
	// down one picked at random; opening one allocates its ring (~7,000
	// objects), which once landed inside the measured runs. A hundred
	// calls open every one (all four but one unopened: 4·0.75¹⁰⁰ ≈ 1e-12).
	for range 100 {
		var res Reservation
		if err := q.Redis().reserve(s, 10, now, &res); err != nil || !res.OK {
			t.Fatalf("check: %v %+v", err, res)
		}
	}
	n := testing.AllocsPerRun(200, func() {
		var res Reservation
		// Under 100 tokens: strconv's own strings.
		if err := q.Redis().reserve(s, 10, now, &res); err != nil || !res.OK {
			t.Fatalf("check: %v %+v", err, res)
		}
	})
	if n > 1 {
		t.Fatalf("%v allocations per check; want at most 1 (rueidis's reply)", n)
	}
}

// TestRedisSettleAllocs: queueing a settlement allocates nothing; the
// settlement loop formats it.
func TestRedisSettleAllocs(t *testing.T) {
	cfg := testConfig(t, "", "      limits: {requests_per_minute: 1000, tokens_per_minute: 100000, tokens_per_day: 1000000, spend_per_day_usd: 10, spend_per_month_usd: 100}", "")
	s := newSubject("acme", false, &cfg.Auth.Keys[0].Limits, false, 1, "p:")
	r := newRedis(nil, time.Second) // no loop: the test drains the queue
	res := Reservation{OK: true, day: 20000, month: 24000}
	res.held[TokensPerMinute], res.held[TokensPerDay] = 500, 500
	n := testing.AllocsPerRun(1000, func() {
		r.settle(s, &res, 1234, 5678, false)
		op := <-r.ops
		if op.mask == 0 || op.full[1] != 1234 || op.delta[1] != 1234-500 {
			t.Fatalf("queued %+v", op)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per settlement; want 0", n)
	}
}
