package batch

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/upstream"
)

// Quotas of batch calls (docs/batches.md, Quotas): uploads, creates,
// cancels and deletes count against the key's requests_per_minute; a
// create reserves its requests' estimate against tokens_per_day.

// countCall counts the call against the key's requests_per_minute; when
// it does not fit it answers 429 key_rate_limited (503 when the quota
// store failed with on_store_failure deny) and reports false.
func (c *call) countCall() bool {
	p := c.st.Quota
	if p == nil || !p.Active() {
		return true
	}
	r := p.BatchCall(c.caller.Key(), c.s.clock())
	return c.admitted(&r)
}

// reserve counts a create and reserves tokens; when that does not fit it
// answers 429 (key_rate_limited for the rate, key_budget_exceeded for a
// budget) and reports false.
func (c *call) reserve(tokens int64) (quota.BatchHold, bool) {
	p := c.st.Quota
	if p == nil || !p.Active() {
		return quota.BatchHold{}, true
	}
	hold, r, never := p.BatchReserve(c.caller.Key(), tokens, c.s.clock())
	if never {
		c.rc.SetConnectionClose()
		c.fail(fasthttp.StatusTooManyRequests, "this batch's estimate of "+strconv.FormatInt(tokens, 10)+
			" tokens is over the key's whole tokens_per_day budget; split it", upstream.TypeRateLimit, quota.CodeKeyBudgetExceeded)
		return hold, false
	}
	return hold, c.admitted(&r)
}

// admitted answers a refused reservation r and reports whether it was
// admitted.
func (c *call) admitted(r *quota.Reservation) bool {
	switch {
	case r.OK:
		return true
	case r.Unavailable:
		c.fail(fasthttp.StatusServiceUnavailable, "the quota store is unavailable; try again shortly",
			upstream.TypeUpstream, quota.CodeQuotaStoreUnavailable)
		return false
	}
	c.rc.SetConnectionClose() // an upload's body is not read
	c.rc.Response.Header.Set(fasthttp.HeaderRetryAfter, strconv.FormatInt(quota.RetryAfterSeconds(r.RetryAfter), 10))
	code, what := quota.CodeKeyRateLimited, "rate limit"
	if !r.Denied.Rate() {
		code, what = quota.CodeKeyBudgetExceeded, "budget"
	}
	c.fail(fasthttp.StatusTooManyRequests, "this key is over its "+what+" "+r.Denied.String(), upstream.TypeRateLimit, code)
	return false
}
