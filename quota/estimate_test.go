package quota

import (
	"math"
	"sync"
	"testing"
	"time"
)

// TestEstimatorAverage: the ratio starts at 1 and moves a tenth of the way
// to each observation (counted input ÷ ceil(body bytes / 4)), each
// observation clamped to [0.05, 1]; the average stays in that range.
func TestEstimatorAverage(t *testing.T) {
	var e estimator
	if e.Ratio() != 1 {
		t.Fatalf("unlearned ratio %v", e.Ratio())
	}
	e.learn(100, 1000) // 0.1: 1 + (0.1 - 1) / 10
	if got := e.Ratio(); math.Abs(got-0.91) > 1e-6 {
		t.Fatalf("after one 0.1: %v; want 0.91", got)
	}
	e.learn(5000, 1000) // 5 clamps to 1: 0.91 + 0.009
	if got := e.Ratio(); math.Abs(got-0.919) > 1e-6 {
		t.Fatalf("after an observation over 1: %v; want 0.919", got)
	}
	ref := 0.919
	for range 200 {
		e.learn(0, 1000) // 0 clamps to 0.05
		ref += (0.05 - ref) / 10
	}
	if got := e.Ratio(); got < 0.05 || math.Abs(got-ref) > 1e-4 {
		t.Fatalf("after 200 zeros: %v; want %v, at least 0.05", got, ref)
	}
	e.learn(10, 0) // no body: nothing learned
	if got := e.Ratio(); math.Abs(got-ref) > 1e-4 {
		t.Fatalf("an empty body moved the ratio to %v", got)
	}
	var nilE *estimator
	nilE.learn(1, 1)
	if nilE.Ratio() != 1 {
		t.Fatal("a nil estimator is not 1")
	}
}

// TestEstimatorConcurrent: learners racing on one key lose no update's
// bounds: the ratio ends where every observation pulls it.
func TestEstimatorConcurrent(t *testing.T) {
	var e estimator
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				e.learn(200, 1000)
			}
		}()
	}
	wg.Wait()
	if got := e.Ratio(); math.Abs(got-0.2) > 0.001 {
		t.Fatalf("ratio %v after 4000 observations of 0.2", got)
	}
}

// TestEstimateReserves: the reservation is ceil(body bytes / 4 × ratio) +
// the completion part, the ratio learned from the key's settled answers
// (counted input: cache reads left out for a key that does not count
// them); a reload that keeps the key keeps it, one that drops the key
// drops it, and a key without limits learns too (for its targets' limits).
func TestEstimateReserves(t *testing.T) {
	q, p := memQuotas(t, testConfig(t, "", "      limits: {tokens_per_minute: 1000000}", ""))
	body := bodyOf(40000) // 10000 quarters, max_tokens 10
	begin := func(p *Plan, key string) *Request {
		r := &Request{}
		if !r.Begin(p, key, body, []byte("gpt-4o"), time.Now()) {
			t.Fatalf("%s refused", key)
		}
		return r
	}
	r := begin(p, "acme")
	if r.Tokens() != 10000+10 {
		t.Fatalf("unlearned reservation %d; want 10010", r.Tokens())
	}
	// An agent's turn: 9,500 of its 10,000 input tokens read from the cache.
	agent := Usage{Input: 300, CacheRead: 9500, CacheWrite: 200, Output: 50, Known: true}
	r.Finish("openai", true, agent, time.Now())
	for range 40 {
		begin(p, "acme").Finish("openai", true, agent, time.Now())
	}
	ratio, ok := p.EstimateRatio("acme")
	if !ok || math.Abs(ratio-0.05) > 0.02 { // counted 500 of 10000: 0.05
		t.Fatalf("ratio %v after 41 turns at 0.05", ratio)
	}
	r = begin(p, "acme")
	if want := int64(math.Ceil(40000*ratio/4)) + 10; r.Tokens() < want-1 || r.Tokens() > want+1 {
		t.Fatalf("learned reservation %d; want about %d", r.Tokens(), want)
	}
	r.Finish("", false, Usage{}, time.Now()) // a failure teaches nothing
	if again, _ := p.EstimateRatio("acme"); again != ratio {
		t.Fatalf("a failed request moved the ratio from %v to %v", ratio, again)
	}
	// A key without limits learns too; one unknown to the config does not.
	begin(p, "free").Finish("openai", true, agent, time.Now())
	if f, _ := p.EstimateRatio("free"); f >= 1 {
		t.Fatalf("free did not learn: %v", f)
	}
	if _, ok := p.EstimateRatio("nobody"); ok {
		t.Fatal("a ratio for a name the config does not have")
	}
	// A reload that keeps the key keeps the ratio; one that drops it drops it.
	p2 := q.Plan(testConfig(t, "", "      limits: {tokens_per_minute: 2000000}", ""))
	if kept, _ := p2.EstimateRatio("acme"); kept != ratio {
		t.Fatalf("reload: ratio %v; want %v kept", kept, ratio)
	}
	cfg := testConfig(t, "", "", "")
	cfg.Auth.Keys = cfg.Auth.Keys[1:] // acme removed
	q.Plan(cfg)
	p4 := q.Plan(testConfig(t, "", "", ""))
	if back, _ := p4.EstimateRatio("acme"); back != 1 {
		t.Fatalf("a key removed and added again kept ratio %v", back)
	}
}
