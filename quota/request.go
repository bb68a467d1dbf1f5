package quota

import (
	"bytes"
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
	tokens  int64
	model   []byte

	member    *Subject
	memberRes Reservation
	// memberName is the member reached last ("" = none).
	memberName string
	price      Price
	priced     bool
	// minWait is the shortest wait among members skipped for quota.
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
// the check reads no clock). model must
// stay valid until the walk ends. It reports whether the request may go
// on; when not, Key() holds the refusal (Unavailable, or Denied and
// RetryAfter). A nil p makes r inactive.
func (r *Request) Begin(p *Plan, keyName string, body, model []byte, now time.Time) bool {
	*r = Request{plan: p, keyName: keyName, model: model, minWait: -1}
	if p == nil {
		return true
	}
	r.tokens = Estimate(body, p.estimate)
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
		r.key = nil // nothing held
		return false
	}
	return true
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
// reserves on target's limits. ok false: skip the member; wait is how long
// until it has room.
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
// answered ("" = none), ok whether it succeeded, and prompt/completion its
// usage (known false: none reported, so the tokens reserved stand). A
// failed request refunds everything. now is the answer's end (the hot path
// passes the walk's last clock reading). It returns the spend in micro-USD
// (-1 when unknown) and leaves r inactive; later calls do nothing.
func (r *Request) Finish(target string, ok bool, prompt, completion int64, known bool, now time.Time) (spend int64) {
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
	tokens := int64(-1)
	if known {
		tokens = prompt + completion
		if r.priced && target == r.memberName {
			spend = r.price.Spend(prompt, completion)
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

// Active reports whether r holds anything to settle.
func (r *Request) Active() bool { return r.plan != nil }

// Estimate returns the tokens reserved before the call (docs/quotas.md):
// ceil(len(body)/4) plus the smallest of the body's max_tokens,
// max_completion_tokens or max_output_tokens and completion, or completion
// when it names none. The names are found with one byte search for
// `"max_`, so a nested member of the same name may be read instead;
// settlement corrects any difference.
func Estimate(body []byte, completion int64) int64 {
	n := (int64(len(body)) + 3) / 4
	c := completion
	for off := 0; off < len(body); {
		i := bytes.Index(body[off:], maxPrefix)
		if i < 0 {
			break
		}
		j := off + i + len(maxPrefix)
		off = j
		for _, name := range maxTokenNames {
			if bytes.HasPrefix(body[j:], name) {
				if v, ok := valueAfter(body, j+len(name)); ok && v < c {
					c = v
				}
				break
			}
		}
	}
	return n + max(c, 0)
}

var (
	maxPrefix     = []byte(`"max_`)
	maxTokenNames = [...][]byte{[]byte(`tokens"`), []byte(`completion_tokens"`), []byte(`output_tokens"`)}
)

// valueAfter reads `: <integer>` at body[j:].
func valueAfter(body []byte, j int) (int64, bool) {
	for j < len(body) && isSpace(body[j]) {
		j++
	}
	if j >= len(body) || body[j] != ':' {
		return 0, false
	}
	j++
	for j < len(body) && isSpace(body[j]) {
		j++
	}
	var v int64
	k := j
	for k < len(body) && body[k] >= '0' && body[k] <= '9' && v < 1<<40 {
		v = v*10 + int64(body[k]-'0')
		k++
	}
	return v, k > j
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
