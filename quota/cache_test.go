package quota

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/quota/redistest"
)

// bodyOf returns a chat body of about n bytes with max_tokens 10.
func bodyOf(n int) []byte {
	head := `{"model":"gpt-4o","max_tokens":10,"messages":[{"role":"user","content":"`
	tail := `"}]}`
	return []byte(head + strings.Repeat("x", max(n-len(head)-len(tail), 0)) + tail)
}

func metricsText(q *Quotas) string {
	var b bytes.Buffer
	q.Metrics().WritePrometheus(&b)
	return b.String()
}

// TestTooLargeRefusedAtOnce: on both stores, a request reserving more than
// a key's tokens_per_minute or tokens_per_day is refused without asking
// the store, as too large (no wait would help), naming the limit; one
// that fits the capacity is admitted. The stores used to take
// min(reservation, limit) and admit it on a full bucket or a fresh day.
func TestTooLargeRefusedAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			for _, tc := range []struct {
				limits string
				kind   Kind
				size   int // body bytes
			}{
				{"{tokens_per_minute: 1000, requests_per_minute: 50}", TokensPerMinute, 4000}, // 1000 + 10 reserved
				{"{tokens_per_day: 500}", TokensPerDay, 2000},                                 // 500 + 10
			} {
				var q *Quotas
				var p *Plan
				if store == "memory" {
					q, p = memQuotas(t, testConfig(t, "", "      limits: "+tc.limits, ""))
				} else {
					q, p, _ = redisQuotas(t, srv.URL(), "    key_prefix: \""+tc.kind.String()+":\"\n", "      limits: "+tc.limits)
				}
				calls := func() int64 {
					if q.Redis() == nil {
						return 0
					}
					return q.Redis().Calls()
				}
				before := calls()
				var r Request
				if r.Begin(p, "acme", bodyOf(tc.size), []byte("gpt-4o"), time.Now()) {
					t.Fatalf("%s: a request of %d tokens was admitted", tc.limits, r.Tokens())
				}
				res := r.Key()
				if !res.TooLarge || res.Denied != tc.kind || res.RetryAfter != 0 || res.Requested != r.Tokens() || res.Requested <= p.keys["acme"].Limit[tc.kind] {
					t.Fatalf("%s: refusal %+v (reserving %d)", tc.limits, res, r.Tokens())
				}
				if calls() != before {
					t.Fatalf("%s: the store was asked about a request that can never fit", tc.limits)
				}
				msg := r.TooLargeMessage()
				if !strings.Contains(msg, "request too large for this key's "+tc.kind.String()+": limit ") || !strings.Contains(msg, ", requested "+strconv.FormatInt(r.Tokens(), 10)+" (") {
					t.Fatalf("message %q", msg)
				}
				if tc.kind == TokensPerMinute && (res.Remaining[RequestsPerMinute] != 50 || res.Remaining[TokensPerMinute] != 1000) {
					t.Fatalf("a refusal that took nothing reports room %v", res.Remaining)
				}
				if !strings.Contains(metricsText(q), `switchyard_quota_rejections_total{key="acme",limit="`+tc.kind.String()+`"} 1`) {
					t.Fatalf("rejection not counted:\n%s", metricsText(q))
				}
				r.Finish("", false, Usage{}, time.Now())
				// The same limit admits a request that fits its capacity.
				var ok Request
				if !ok.Begin(p, "acme", bodyOf(tc.size/2), []byte("gpt-4o"), time.Now()) {
					t.Fatalf("%s: a request of %d tokens was refused: %+v", tc.limits, ok.Tokens(), *ok.Key())
				}
				ok.Finish("", false, Usage{}, time.Now())
			}
		})
	}
}

// TestMemberTooLargeSkipped: a chain member whose own token limit is
// smaller than the reservation is skipped without a wait of its own; the
// next member still serves; when every skipped member is too small, the
// wait is -1 (no Retry-After).
func TestMemberTooLargeSkipped(t *testing.T) {
	cfg := testConfig(t, "", "", "    limits: {tokens_per_minute: 300}")
	q, p := memQuotas(t, cfg)
	var r Request
	r.Begin(p, "acme", bodyOf(2000), []byte("gpt-4o"), time.Now()) // 500 + 10
	if wait, ok := r.Enter("openai"); ok || wait != -1 {
		t.Fatalf("openai: wait %v ok %v; want skipped, -1", wait, ok)
	}
	if _, ok := r.Enter("backup"); !ok {
		t.Fatal("backup, without limits, refused")
	}
	r.Finish("backup", true, Usage{Input: 400, Output: 10, Known: true}, time.Now())
	if !strings.Contains(metricsText(q), `switchyard_quota_skips_total{target="openai",limit="tokens_per_minute"} 1`) {
		t.Fatalf("skip not counted:\n%s", metricsText(q))
	}
	// A member that fits keeps its own wait beside a too-small one.
	var small Request
	small.Begin(p, "acme", bodyOf(800), []byte("gpt-4o"), time.Now()) // 200 + 10
	if _, ok := small.Enter("openai"); !ok {
		t.Fatal("a request that fits was skipped")
	}
	small.Finish("openai", true, Usage{Input: 200, Output: 10, Known: true}, time.Now())
	var again Request
	again.Begin(p, "acme", bodyOf(800), []byte("gpt-4o"), time.Now())
	if wait, ok := again.Enter("openai"); ok || wait <= 0 {
		t.Fatalf("a member out of room: wait %v ok %v; want a positive wait", wait, ok)
	}
	again.Finish("", false, Usage{}, time.Now())
}

// TestCountCacheReadsPerSubject: one answer settles each limit to what
// that limit counts: the key (count_cache_reads false by default) without
// the cache reads, the openai target (true by default) with them, and a
// key that sets count_cache_reads: true with them.
func TestCountCacheReadsPerSubject(t *testing.T) {
	u := Usage{Input: 10, CacheRead: 1000, CacheWrite: 5, Output: 20, Known: true}
	for _, tc := range []struct {
		keyLimits     string
		key, target   int64
		targetLimits  string
		wantSpendUSDs int64
	}{
		{"{tokens_per_day: 100000}", 35, 1035, "    limits: {tokens_per_day: 100000}", 0},
		{"{tokens_per_day: 100000, count_cache_reads: true}", 1035, 35, "    limits: {tokens_per_day: 100000, count_cache_reads: false}", 0},
	} {
		cfg := testConfig(t, "", "      limits: "+tc.keyLimits, tc.targetLimits)
		_, p := memQuotas(t, cfg)
		var r Request
		if !r.Begin(p, "acme", bodyOf(100), []byte("gpt-4o"), time.Now()) {
			t.Fatal("refused")
		}
		if _, ok := r.Enter("openai"); !ok {
			t.Fatal("skipped")
		}
		r.Finish("openai", true, u, time.Now())
		k, _ := p.RoomOf("acme", false)
		tg, _ := p.RoomOf("openai", true)
		if used := k.Limit[TokensPerDay] - k.Left[TokensPerDay]; used != tc.key {
			t.Errorf("%s: key counted %d; want %d", tc.keyLimits, used, tc.key)
		}
		if used := tg.Limit[TokensPerDay] - tg.Left[TokensPerDay]; used != tc.target {
			t.Errorf("%s: target counted %d; want %d", tc.targetLimits, used, tc.target)
		}
	}
}

// TestSpendPricesEachPart: spend is uncached × input + cache reads ×
// cache_read + cache writes × cache_write + output × output; a price
// without cache prices charges the cache's tokens at input.
func TestSpendPricesEachPart(t *testing.T) {
	cfg := testConfig(t, "", "      limits: {spend_per_day_usd: 100}", "")
	cfg.Targets[0].Prices["gpt-4o"] = config.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, HasCacheRead: true, HasCacheWrite: true}
	_, p := memQuotas(t, cfg)
	u := Usage{Input: 1000, CacheRead: 100000, CacheWrite: 2000, Output: 500, Known: true}
	spend := func(target string) int64 {
		var r Request
		r.Begin(p, "acme", bodyOf(100), []byte("gpt-4o"), time.Now())
		r.Enter(target)
		return r.Finish(target, true, u, time.Now())
	}
	// 1000×3 + 100000×0.3 + 2000×3.75 + 500×15 = 3000 + 30000 + 7500 + 7500 µUSD.
	if got := spend("openai"); got != 48000 {
		t.Fatalf("spend %d µUSD; want 48000", got)
	}
	// backup prices "gpt-*" {input: 1, output: 1}: every input token at 1.
	if got := spend("backup"); got != 1000+100000+2000+500 {
		t.Fatalf("spend without cache prices %d µUSD; want %d", got, 1000+100000+2000+500)
	}
}
