//go:build !race

package quota

import (
	"testing"
	"time"
)

// TestEstimateAllocsZero: the learned estimate costs no allocation per
// request: reading the ratio and reserving with it (Begin), settling a
// cached answer to each subject's count and learning from it (Finish),
// with limits that count cache reads and limits that do not.
func TestEstimateAllocsZero(t *testing.T) {
	cfg := testConfig(t, "", `      limits: {tokens_per_minute: 1000000000000, tokens_per_day: 1000000000000, spend_per_day_usd: 1000000}`,
		`    limits: {tokens_per_minute: 1000000000000, count_cache_reads: true}`)
	_, p := memQuotas(t, cfg)
	body := bodyOf(100 << 10) // an agent's context
	model := []byte("gpt-4o")
	now := time.Now()
	u := Usage{Input: 500, CacheRead: 24000, CacheWrite: 100, Output: 300, Known: true}
	var r Request
	n := testing.AllocsPerRun(1000, func() {
		if !r.Begin(p, "acme", body, model, now) {
			t.Fatal("refused")
		}
		if _, ok := r.Enter("openai"); !ok {
			t.Fatal("member refused")
		}
		r.Finish("openai", true, u, now)
	})
	if n != 0 {
		t.Fatalf("%v allocations per request; want 0", n)
	}
	if ratio, _ := p.EstimateRatio("acme"); ratio > 0.1 {
		t.Fatalf("the ratio did not learn: %v", ratio)
	}
	var e estimator
	if n := testing.AllocsPerRun(1000, func() { e.learn(100, 1000) }); n != 0 {
		t.Fatalf("learn: %v allocations; want 0", n)
	}
}
