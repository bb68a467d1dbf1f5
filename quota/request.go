package quota

import (
	"strconv"
	"time"
)

// Request is one request's quota state: its key's reservation, the
// reservation on the chain member being tried, and the tokens reserved.
// It lives in the hot path's pooled per-request memory; the zero value is
// inactive. Not safe for concurrent use: the handler uses it, then (for a
// stream) whoever settles it at the stream's end.
type Request struct {
	plan   *Plan
	key    *Subject
	keyRes Reservation
	// keyName labels spend metrics ("" without auth).
	keyName string
	// tokens is the reservation; quarter is ceil(body bytes / 4), what
	// the key's estimator learns against (est; nil: no key).
	tokens, quarter int64
	est             *estimator
	// keyCacheReads is the key's count_cache_reads.
	keyCacheReads bool
	model         []byte

	member    *Subject
	memberRes Reservation
	// memberName is the member reached last ("" = none).
	memberName string
	price      Price
	priced     bool
	// minWait is the shortest wait among members skipped for quota; -1
	// when none had one (none skipped, or each too small for the request).
	minWait time.Duration
	// storeDown: a member was skipped because the store failed (deny).
	storeDown bool
}

// StoreDown reports whether a member was skipped because the quota store
// failed and on_store_failure is deny.
func (r *Request) StoreDown() bool { return r.storeDown }

// Begin starts r for a request of client key keyName (its name; "" without
// auth) with body on plan p, reserving on the key's limits at now (the
// request's arrival: the hot path passes the time fasthttp read for it, so
// the check reads no clock). The reservation is the key's learned
// estimate (estimate.go). model must stay valid until the walk ends. It
// reports whether the request may go on; when not, Key() holds the
// refusal (Unavailable, TooLarge, or Denied and RetryAfter). A nil p makes
// r inactive.
func (r *Request) Begin(p *Plan, keyName string, body, model []byte, now time.Time) bool {
	*r = Request{plan: p, keyName: keyName, model: model, minWait: -1}
	if p == nil {
		return true
	}
	s := p.keys[keyName]
	if s != nil {
		r.est = s.est // one map lookup for a key with limits
	} else {
		r.est = p.estimates[keyName]
	}
	r.quarter = bodyQuarter(len(body))
	r.tokens = estimateAt(body, p.estimate, r.est.ratio())
	if s == nil {
		return true
	}
	r.keyCacheReads = s.cacheReads
	if k, ok := s.tooLarge(r.tokens); ok {
		// It can never fit: refused at once, without asking the store.
		r.keyRes = Reservation{Denied: k, TooLarge: true, Requested: r.tokens}
		r.keyRes.Remaining, r.keyRes.Reset = s.peekRates(now)
		p.q.metrics.rejected(keyName, k)
		return false
	}
	r.key = s
	p.q.reserve(s, r.tokens, &r.keyRes, now)
	if !r.keyRes.OK {
		if !r.keyRes.Unavailable {
			p.q.metrics.rejected(keyName, r.keyRes.Denied)
		}
		r.key = nil // nothing held
		return false
	}
	return true
}

// Tokens returns the tokens the request reserves (its estimate).
func (r *Request) Tokens() int64 { return r.tokens }

// TooLargeMessage describes a refusal of Key().TooLarge as OpenAI's
// "Request too large" does: the limit, its size and the reservation.
func (r *Request) TooLargeMessage() string {
	res := &r.keyRes
	limit := int64(0)
	if s := r.plan.keys[r.keyName]; s != nil {
		limit = s.Limit[res.Denied]
	}
	return "request too large for this key's " + res.Denied.String() + ": limit " + strconv.FormatInt(limit, 10) +
		", requested " + strconv.FormatInt(res.Requested, 10) +
		" (the estimated input tokens plus the completion tokens reserved); send a smaller request or a lower max_tokens"
}

// Key returns the key's reservation (its refusal, after Begin said no).
func (r *Request) Key() *Reservation { return &r.keyRes }

// KeyHasRates reports whether the key has per-minute limits (and so gets
// rate-limit headers).
func (r *Request) KeyHasRates() bool {
	if r.plan == nil {
		return false
	}
	s := r.plan.keys[r.keyName]
	return s != nil && s.HasRates()
}

// Limits returns the key's subject (nil when it has no limits).
func (r *Request) Limits() *Subject {
	if r.plan == nil {
		return nil
	}
	return r.plan.keys[r.keyName]
}

// Enter is called by the walk when it reaches chain member target: it
// gives back what the previous member held (that attempt failed) and
// reserves on target's limits. ok false: skip the member; wait is the
// soonest a member skipped so far has room, -1 when none ever will (each
// one's token limit is smaller than the request).
func (r *Request) Enter(target string) (wait time.Duration, ok bool) {
	if r.plan == nil {
		return 0, true
	}
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
	if k, ok := s.tooLarge(r.tokens); ok {
		// Its own token limit is smaller than the request: it never has
		// room for it. Skipped like a member without room, with no wait
		// of its own (see minWait).
		r.plan.q.metrics.skipped(target, k)
		return r.minWait, false
	}
	r.plan.q.reserve(s, r.tokens, &r.memberRes, now)
	if !r.memberRes.OK {
		// A store failure with deny skips the member too: the walk cannot
		// know it has room.
		k := r.memberRes.Denied
		r.plan.q.metrics.skipped(target, k)
		w := r.memberRes.RetryAfter
		if r.memberRes.Unavailable {
			w = time.Second
			r.storeDown = true
		}
		if r.minWait < 0 || w < r.minWait {
			r.minWait = w
		}
		r.memberRes = Reservation{}
		return r.minWait, false
	}
	r.member = s
	return 0, true
}

func (r *Request) releaseMember(now time.Time) {
	if r.member != nil {
		r.plan.q.settle(r.member, &r.memberRes, 0, 0, true, now)
		r.member = nil
	}
}

// Finish settles r once the answer is complete: target is the member that
// answered ("" = none), ok whether it succeeded, and u its usage (not
// Known: none reported, so the tokens reserved stand). Each limit is
// settled to the tokens it counts (its subject's count_cache_reads), and
// the key's estimator learns from the answer. A failed request refunds
// everything. now is the answer's end (the hot path passes the walk's last
// clock reading). It returns the spend in micro-USD (-1 when unknown) and
// leaves r inactive; later calls do nothing.
func (r *Request) Finish(target string, ok bool, u Usage, now time.Time) (spend int64) {
	spend = -1
	if r.plan == nil {
		return spend
	}
	if !ok {
		r.releaseMember(now)
		if r.key != nil {
			r.plan.q.settle(r.key, &r.keyRes, 0, 0, true, now)
		}
		*r = Request{}
		return spend
	}
	keyTokens, memberTokens := int64(-1), int64(-1)
	if u.Known {
		keyTokens = u.counted(r.keyCacheReads)
		if r.member != nil {
			memberTokens = u.counted(r.member.cacheReads)
		}
		if r.priced && target == r.memberName {
			spend = r.price.Spend(&u)
		}
		r.est.learn(u.countedInput(r.keyCacheReads), r.quarter)
	}
	s := max(spend, 0)
	if r.member != nil {
		r.plan.q.settle(r.member, &r.memberRes, memberTokens, s, false, now)
	}
	if r.key != nil {
		r.plan.q.settle(r.key, &r.keyRes, keyTokens, s, false, now)
	}
	if spend > 0 {
		r.plan.q.metrics.spent(r.keyName, target, spend)
	}
	*r = Request{}
	return spend
}

// Active reports whether r holds anything to settle.
func (r *Request) Active() bool { return r.plan != nil }
