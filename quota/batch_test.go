package quota

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/quota/redistest"
)

const batchLimits = "      limits: {requests_per_minute: 3, tokens_per_minute: 100, tokens_per_day: 1000, spend_per_day_usd: 1}"

// testBatchQuota runs the batch accounting on plan p (key acme with
// batchLimits); settled waits for queued settlements.
func testBatchQuota(t *testing.T, p *Plan, settled func()) {
	now := time.Now()
	room := func(k Kind) int64 {
		t.Helper()
		settled()
		var r Reservation
		// Read through a zero reservation of the same counters.
		s := p.keys["acme"].only(k)
		p.q.reserve(s, 0, &r, time.Now())
		if k.Rate() {
			return r.Remaining[k]
		}
		if r.src == srcMemory {
			return roomMem(s.mem, &s.Limit, s.kinds, time.Now())[k]
		}
		return r.budgetRoom[k]
	}
	// A call counts one request and no token; the per-minute token rate is
	// never touched by batches.
	if r := p.BatchCall("acme", now); !r.OK {
		t.Fatalf("first call refused: %+v", r)
	}
	hold, r, never := p.BatchReserve("acme", 600, now)
	if !r.OK || never || hold.Tokens != 600 {
		t.Fatalf("reserve 600 = %+v, %+v, %v", hold, r, never)
	}
	if got := room(TokensPerDay); got != 400 {
		t.Fatalf("tokens_per_day room after reserving 600 = %d; want 400", got)
	}
	if got := room(TokensPerMinute); got != 100 {
		t.Fatalf("tokens_per_minute room = %d; want 100 (batches never count against it)", got)
	}
	// A second batch of 600 does not fit today's budget.
	if _, r, never := p.BatchReserve("acme", 600, now); r.OK || never || r.Denied != TokensPerDay {
		t.Fatalf("second reserve = %+v, never %v; want refused by tokens_per_day", r, never)
	}
	// More than the whole budget can never fit.
	if _, r, never := p.BatchReserve("acme", 1001, now); r.OK || !never {
		t.Fatalf("reserve over the budget = %+v, never %v; want never", r, never)
	}
	// The batch ends having used 100 counted tokens (uncached input, cache
	// writes and output; the key does not count cache reads) and 0.5 USD:
	// the reservation is given back and the usage charged.
	p.BatchSettle("acme", "openai", hold, &Usage{Input: 50, CacheRead: 30, CacheWrite: 10, Output: 40, Known: true}, 500_000, now)
	if got := room(TokensPerDay); got != 900 {
		t.Fatalf("tokens_per_day room after settling = %d; want 900", got)
	}
	if got := room(SpendPerDay); got != 500_000 {
		t.Fatalf("spend room after settling = %d; want 500000 µUSD", got)
	}
	// Spend used up: a batch is refused though tokens remain.
	p.BatchSettle("acme", "openai", BatchHold{}, &Usage{Known: true}, 600_000, now)
	settled()
	if _, r, _ := p.BatchReserve("acme", 10, now); r.OK || r.Denied != SpendPerDay {
		t.Fatalf("reserve with spend used up = %+v; want refused by spend_per_day_usd", r)
	}
	// requests_per_minute (3) holds the first call and the create that
	// was admitted; refused creates gave theirs back.
	if r := p.BatchCall("acme", now); !r.OK {
		t.Fatalf("third call refused: %+v", r)
	}
	if r := p.BatchCall("acme", now); r.OK || r.Denied != RequestsPerMinute {
		t.Fatalf("fourth call = %+v; want refused by requests_per_minute", r)
	}
	// A reservation of a past day is not given back to today.
	yesterday := BatchHold{Tokens: 50, Day: hold.Day - 1, Month: hold.Month}
	before := room(TokensPerDay)
	p.BatchSettle("acme", "openai", yesterday, nil, 0, now)
	if got := room(TokensPerDay); got != before {
		t.Fatalf("settling yesterday's reservation changed today's room %d -> %d", before, got)
	}
}

func TestBatchQuotaMemory(t *testing.T) {
	_, p := memQuotas(t, testConfig(t, "", batchLimits, ""))
	testBatchQuota(t, p, func() {})
}

func TestBatchQuotaRedis(t *testing.T) {
	srv := redistest.Start(t)
	q, p, _ := redisQuotas(t, srv.URL(), "", batchLimits)
	testBatchQuota(t, p, func() { waitSettled(t, q) })
}

func TestBatchPrice(t *testing.T) {
	cfg := testConfig(t, "", "", "    batch_prices:\n      gpt-4o: {input: 1, output: 3}\n")
	_, p := memQuotas(t, cfg)
	// A batch price without cache prices charges cache tokens at its input
	// price, like any price.
	if pr, ok := p.BatchPrice("openai", []byte("gpt-4o")); !ok || pr != (Price{In: 1, Out: 3, CacheRead: 1, CacheWrite: 1}) {
		t.Fatalf("batch_prices = %+v, %v", pr, ok)
	}
	// No batch_prices: half of prices.
	if pr, ok := p.BatchPrice("backup", []byte("gpt-4o")); !ok || pr != (Price{In: 0.5, Out: 0.5, CacheRead: 0.5, CacheWrite: 0.5}) {
		t.Fatalf("half of prices = %+v, %v", pr, ok)
	}
	if _, ok := p.BatchPrice("nowhere", []byte("gpt-4o")); ok {
		t.Fatal("a target without prices has a batch price")
	}
}
