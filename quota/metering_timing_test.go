package quota

import (
	"math"
	"testing"
	"time"
)

// The per-request cost of cache-aware metering on the memory store: a
// request's key check with the learned estimate, its member check, and
// its settlement to a four-part usage (each limit's own count, four-part
// spend, the estimator learning), against its twin as the code stood
// before (commit 9a32d2e: ceil(body bytes / 4), prompt + completion
// counted everywhere, two-part spend). Run both with -count and compare
// ns/op; docs/quotas.md (Cached tokens) has the figures.

// meteringConfig is the "client keys + limits (memory)" bench row's shape:
// a key with rates, a day budget and a spend budget; a member with rates.
func meteringPlan(b *testing.B) *Plan {
	cfg := testConfig(b, "", `      limits: {requests_per_minute: 1000000000, tokens_per_minute: 1000000000000, tokens_per_day: 1000000000000, spend_per_day_usd: 1000000}`,
		`    limits: {requests_per_minute: 1000000000, tokens_per_minute: 1000000000000}`)
	_, p := memQuotas(b, cfg)
	return p
}

var meteringBody = []byte(`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)

// BenchmarkMeteringCached is one request's quota work with the learned
// estimate and a cached usage.
func BenchmarkMeteringCached(b *testing.B) {
	p := meteringPlan(b)
	model, now := []byte("gpt-4o"), time.Now()
	u := Usage{Input: 10, CacheRead: 900, CacheWrite: 5, Output: 20, Known: true}
	b.ReportAllocs()
	var r Request
	for b.Loop() {
		if !r.Begin(p, "acme", meteringBody, model, now) {
			b.Fatal("refused")
		}
		if _, ok := r.Enter("openai"); !ok {
			b.Fatal("skipped")
		}
		r.Finish("openai", true, u, now)
	}
}

// BenchmarkMeteringCachedPreChange is BenchmarkMeteringCached's twin: the
// same request through the quota code as it was before cache-aware
// metering (beginPreChange, enterPreChange, finishPreChange).
func BenchmarkMeteringCachedPreChange(b *testing.B) {
	p := meteringPlan(b)
	model, now := []byte("gpt-4o"), time.Now()
	b.ReportAllocs()
	var r Request
	for b.Loop() {
		if !r.beginPreChange(p, "acme", meteringBody, model, now) {
			b.Fatal("refused")
		}
		if _, ok := r.enterPreChange("openai"); !ok {
			b.Fatal("skipped")
		}
		r.finishPreChange("openai", true, 915, 20, true, now)
	}
}

// beginPreChange is Request.Begin as of commit 9a32d2e.
func (r *Request) beginPreChange(p *Plan, keyName string, body, model []byte, now time.Time) bool {
	*r = Request{plan: p, keyName: keyName, model: model, minWait: -1}
	r.tokens = (int64(len(body))+3)/4 + completionPart(body, p.estimate)
	s := p.keys[keyName]
	if s == nil {
		return true
	}
	r.key = s
	p.q.reserve(s, r.tokens, &r.keyRes, now)
	if !r.keyRes.OK {
		if !r.keyRes.Unavailable {
			p.q.metrics.rejected(keyName, r.keyRes.Denied)
		}
		r.key = nil
		return false
	}
	return true
}

// enterPreChange is Request.Enter as of commit 9a32d2e.
func (r *Request) enterPreChange(target string) (time.Duration, bool) {
	now := r.plan.q.now()
	r.releaseMember(now)
	r.memberName = target
	if pt := r.plan.prices[target]; pt != nil {
		r.price, r.priced = pt.lookup(r.model)
	} else {
		r.price, r.priced = Price{}, false
	}
	s := r.plan.targets[target]
	if s == nil {
		return 0, true
	}
	r.plan.q.reserve(s, r.tokens, &r.memberRes, now)
	if !r.memberRes.OK {
		r.memberRes = Reservation{}
		return time.Second, false
	}
	r.member = s
	return 0, true
}

// finishPreChange is Request.Finish as of commit 9a32d2e: prompt +
// completion counted by every limit, spend at two prices.
func (r *Request) finishPreChange(target string, ok bool, prompt, completion int64, known bool, now time.Time) int64 {
	spend := int64(-1)
	if !ok {
		r.releaseMember(now)
		if r.key != nil {
			r.plan.q.settle(r.key, &r.keyRes, 0, 0, true, now)
		}
		*r = Request{}
		return spend
	}
	tokens := int64(-1)
	if known {
		tokens = prompt + completion
		if r.priced && target == r.memberName {
			spend = int64(math.Ceil(float64(prompt)*r.price.In + float64(completion)*r.price.Out))
		}
	}
	s := max(spend, 0)
	if r.member != nil {
		r.plan.q.settle(r.member, &r.memberRes, tokens, s, false, now)
	}
	if r.key != nil {
		r.plan.q.settle(r.key, &r.keyRes, tokens, s, false, now)
	}
	if spend > 0 {
		r.plan.q.metrics.spent(r.keyName, target, spend)
	}
	*r = Request{}
	return spend
}
