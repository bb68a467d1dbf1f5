package batch

import (
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// What the gateway learns from a batch object it relays: the output and
// error files of an OpenAI batch become its owner's, and a batch that
// ended is settled, once, whichever replica sees it first (the record's
// once-only flags): its reservation given back, its usage charged at the
// target's batch prices (docs/batches.md, Quotas).

// terminal reports whether an OpenAI batch status is an end.
func terminal(status string) bool {
	switch status {
	case "completed", "failed", "expired", "cancelled":
		return true
	}
	return false
}

// seenBatch takes what it needs from an OpenAI batch object body of the
// caller's batch o on t.
func (c *call) seenBatch(t *upstream.Target, o tenancy.Object, body []byte) {
	x, ok := parseObject(body)
	if !ok {
		return
	}
	defer x.release()
	c.batchObject(t, o, x.v)
}

// batchObject is seenBatch for a parsed object v.
func (c *call) batchObject(t *upstream.Target, o tenancy.Object, v *fastjson.Value) {
	for _, f := range [...]string{"output_file_id", "error_file_id"} {
		id := str(v, f)
		if id == "" || !validID([]byte(id)) {
			continue
		}
		ctx, cancel := c.storeCtx()
		_, err := c.s.Store.PutNew(ctx, tenancy.Object{Kind: tenancy.KindFile, ID: id, Key: o.Key, Target: o.Target,
			Created: createdAtOr(v, "completed_at", c.s.clock().Unix()), Purpose: "batch_output", Surface: o.Surface, Models: o.Models},
			c.st.Config.Server.Retention())
		cancel()
		if err != nil && c.s.StoreFailed != nil {
			c.s.StoreFailed(err)
		}
	}
	if !terminal(str(v, "status")) {
		return
	}
	var u *quota.Usage
	if us := v.Get("usage"); us != nil && us.Type() == fastjson.TypeObject {
		if got, ok := usageOf(us); ok {
			u = &got
		}
	}
	c.settle(t, o, u, c.spend(t, o.Models, u), true)
}

// createdAtOr reads the Unix time member key of v, or def.
func createdAtOr(v *fastjson.Value, key string, def int64) int64 {
	if n := v.GetInt64(key); n > 0 {
		return n
	}
	return def
}

// spend is the cost in micro-USD of usage u of a batch that named models
// on t, at t's batch prices: the dearest of the models' when a batch names
// several, so spend is never under-counted. u nil: 0.
func (c *call) spend(t *upstream.Target, models []string, u *quota.Usage) int64 {
	return spendOf(c.st.Quota, t, models, u)
}

// spendOf is spend with the quota plan p.
func spendOf(p *quota.Plan, t *upstream.Target, models []string, u *quota.Usage) int64 {
	if p == nil || u == nil {
		return 0
	}
	var best int64
	for _, m := range models {
		if pr, ok := p.BatchPrice(t.Name, []byte(m)); ok {
			best = max(best, pr.Spend(u))
		}
	}
	return best
}

// usageOf reads a usage object (an OpenAI batch's, Responses-shaped; or a
// message batch result's, Anthropic-shaped) in the four parts quotas meter,
// with the provider readers' rules (docs/quotas.md, Cached tokens).
func usageOf(us *fastjson.Value) (quota.Usage, bool) {
	body := append(us.MarshalTo([]byte(`{"usage":`)), '}')
	u, ok := provider.ReadUsage(body)
	if !ok {
		return quota.Usage{}, false
	}
	return quota.Usage{Input: u.Input(), CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Output: u.Completion, Known: u.Known()}, true
}

// settle gives back o's reservation (once) and, when charge, charges its
// usage u (once). u nil: no usage known.
func (c *call) settle(t *upstream.Target, o tenancy.Object, u *quota.Usage, spend int64, charge bool) {
	p := c.st.Quota
	ctx, cancel := c.storeCtx()
	defer cancel()
	key, now := c.caller.Key(), c.s.clock()
	if first, err := c.s.Store.Flag(ctx, key, o.Kind, o.ID, tenancy.FlagReleased); err == nil && first && p != nil {
		p.BatchSettle(key, t.Name, quota.BatchHold{Tokens: o.Tokens, Day: o.Day, Month: o.Month}, nil, 0, now)
	}
	if !charge || u == nil {
		return
	}
	if first, err := c.s.Store.Flag(ctx, key, o.Kind, o.ID, tenancy.FlagCharged); err == nil && first && p != nil {
		p.BatchSettle(key, t.Name, quota.BatchHold{}, u, spend, now)
	}
}

// seenMessageBatch takes what it needs from a message batch object body
// of the caller's batch o on t: when it has ended its reservation is given
// back and its results are metered (meter.go).
func (c *call) seenMessageBatch(t *upstream.Target, o tenancy.Object, body []byte) {
	x, ok := parseObject(body)
	if !ok {
		return
	}
	defer x.release()
	if str(x.v, "processing_status") == "ended" {
		c.settle(t, o, nil, 0, false)
		c.meterResults(t, o)
	}
}

// resultsURL is the gateway's own URL of message batch id's results:
// server.public_url, else the request's own scheme and Host. The scheme is
// the connection's (TLS or not): X-Forwarded-Proto is not trusted, as the
// gateway has no notion of a trusted proxy (set public_url behind one).
func (c *call) resultsURL(id string) string {
	base := c.st.Config.Server.PublicURL
	if base == "" {
		scheme := "http"
		if c.rc.IsTLS() {
			scheme = "https"
		}
		base = scheme + "://" + string(c.rc.Host())
	}
	return base + "/v1/messages/batches/" + id + "/results"
}

// withResultsURL returns body, the message batch object v, with a non-null
// results_url replaced by the gateway's own (resultsURL): a client that
// follows it stays inside the gateway.
func (c *call) withResultsURL(v *fastjson.Value, id string, body []byte) []byte {
	u := v.Get("results_url")
	if u == nil || u.Type() != fastjson.TypeString {
		return body
	}
	var a fastjson.Arena
	v.Set("results_url", a.NewString(c.resultsURL(id)))
	return v.MarshalTo(nil)
}
