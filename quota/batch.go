package quota

import (
	"time"

	"github.com/switchyard/switchyard/config"
)

// Stored batches (docs/batches.md, Quotas). A batch call that changes
// something (an upload, a create, a cancel, a delete) counts against the
// key's requests_per_minute; reads and downloads do not (SDKs poll).
// Creating a batch reserves its estimate against tokens_per_day, checking
// the spend budgets as a request does; the reservation is given back when
// the batch ends, and the usage the batch reports is charged then, once,
// to tokens_per_day and the spend budgets of the window in which the
// gateway sees it end: never to a per-minute rate, the key's or a
// target's, which are for interactive traffic.

// BatchHold is what a batch's creation reserved, kept with the batch's
// record until it ends (possibly on another replica, days later).
type BatchHold struct {
	// Tokens were reserved against tokens_per_day in the windows Day and
	// Month (see windows); 0 = nothing reserved.
	Tokens     int64
	Day, Month int64
}

// only returns a copy of s that counts only the kinds in want (the same
// counters: a check or settlement through it is one of s's).
func (s *Subject) only(want ...Kind) *Subject {
	c := *s
	c.kinds, c.redisKeys, c.redisArgs = nil, nil, nil
	for i, k := range s.kinds {
		for _, w := range want {
			if k == w {
				c.kinds = append(c.kinds, k)
				c.redisKeys = append(c.redisKeys, s.redisKeys[i])
				c.redisArgs = append(c.redisArgs, s.redisArgs[3*i:3*i+3]...)
			}
		}
	}
	if len(c.kinds) == 0 {
		return nil
	}
	return &c
}

// BatchCall counts one batch call of key against its requests_per_minute
// at now. The reservation says whether it fits (Denied, RetryAfter when
// not; Unavailable when the store failed and on_store_failure is deny); a
// key without that limit always fits.
func (p *Plan) BatchCall(key string, now time.Time) Reservation {
	var r Reservation
	s := p.keys[key]
	if s != nil {
		s = s.only(RequestsPerMinute)
	}
	if s == nil {
		r.OK = true
		return r
	}
	p.q.reserve(s, 0, &r, now)
	if !r.OK && !r.Unavailable {
		p.q.metrics.rejected(key, r.Denied)
	}
	return r
}

// BatchReserve counts the creation of a batch of key (one call against
// requests_per_minute) and reserves tokens against tokens_per_day at now,
// checking the spend budgets. A refusal is in the Reservation (Denied,
// RetryAfter); Never is true when tokens is more than tokens_per_day
// itself, which no wait can make fit.
func (p *Plan) BatchReserve(key string, tokens int64, now time.Time) (hold BatchHold, r Reservation, never bool) {
	s := p.keys[key]
	if s != nil {
		s = s.only(RequestsPerMinute, TokensPerDay, SpendPerDay, SpendPerMonth)
	}
	if s == nil {
		r.OK = true
		return BatchHold{}, r, false
	}
	if lim := s.Limit[TokensPerDay]; lim > 0 && tokens > lim {
		r.Denied = TokensPerDay
		p.q.metrics.rejected(key, TokensPerDay)
		return BatchHold{}, r, true
	}
	p.q.reserve(s, tokens, &r, now)
	if !r.OK {
		if !r.Unavailable {
			p.q.metrics.rejected(key, r.Denied)
		}
		return BatchHold{}, r, false
	}
	hold = BatchHold{Day: r.day, Month: r.month}
	if s.Limit[TokensPerDay] > 0 {
		hold.Tokens = r.held[TokensPerDay]
	}
	return hold, r, false
}

// BatchSettle settles a batch of key on target that ended, seen at now: what hold
// reserved is given back (when its window is still the current one: a
// past day's reservation went with its day), and usage u (its tokens as the
// key counts them) and spend (micro-USD) are charged to the current windows
// of tokens_per_day and the spend budgets. u nil or not Known: no usage
// reported, nothing charged. Call it once per batch.
func (p *Plan) BatchSettle(key, target string, hold BatchHold, u *Usage, spend int64, now time.Time) {
	s := p.keys[key]
	if s != nil {
		s = s.only(TokensPerDay, SpendPerDay, SpendPerMonth)
	}
	if s == nil {
		return
	}
	r := Reservation{day: hold.Day, month: hold.Month, src: srcMemory}
	if p.q.redis != nil {
		r.src = srcRedis
	}
	r.held[TokensPerDay] = hold.Tokens
	var tokens int64
	if u != nil && u.Known {
		tokens = u.counted(s.cacheReads) // as the key counts them (docs/quotas.md, Cached tokens)
	} else {
		spend = 0
	}
	p.q.settle(s, &r, tokens, spend, false, now)
	if spend > 0 {
		p.q.metrics.spent(key, target, spend)
	}
}

// BatchPrice returns the price of model (the id the client asked for) in
// a stored batch on target: its batch_prices entry, else half its prices
// entry (the providers' batch discount); ok is false when it has neither.
func (p *Plan) BatchPrice(target string, model []byte) (Price, bool) {
	if t := p.batchPrices[target]; t != nil {
		return t.lookup(model)
	}
	if t := p.prices[target]; t != nil {
		pr, ok := t.lookup(model)
		return Price{In: pr.In / 2, Out: pr.Out / 2, CacheRead: pr.CacheRead / 2, CacheWrite: pr.CacheWrite / 2}, ok
	}
	return Price{}, false
}

// EstimateOf is the tokens one request with body reserves before its call
// (see Estimate), with this plan's completion estimate.
func (p *Plan) EstimateOf(body []byte) int64 {
	if p == nil {
		return Estimate(body, config.DefaultCompletionEstimate)
	}
	return Estimate(body, p.estimate)
}

// compileBatchPrices compiles cfg's batch_prices into p.
func (p *Plan) compileBatchPrices(cfg *config.Config) {
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		if len(t.BatchPrices) > 0 {
			if p.batchPrices == nil {
				p.batchPrices = map[string]*priceTable{}
			}
			p.batchPrices[t.VirtualKey] = newPriceTable(t.BatchPrices)
		}
	}
}
