package hotpath

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// Quotas (docs/quotas.md): the key's limits are checked once its key and
// body are read, before routing; each chain member's as the walk reaches
// it (upstream.Call.Quota); everything is settled to the reported usage
// when the answer (or the stream) ends, and refunded when it failed.

// admitKey checks and reserves the client key's limits for the request
// in sc with body, and sets the rate-limit headers. On a refusal it writes
// 429 key_rate_limited / key_budget_exceeded or 503 quota_store_unavailable
// in s's envelope and reports false.
func admitKey(rc *fasthttp.RequestCtx, st *State, s router.Surface, sc *scratch, body []byte) bool {
	if st.Quota == nil || !st.Quota.Active() {
		return true
	}
	ok := sc.quota.Begin(st.Quota, keyName(sc.key), body, sc.peek.Model, rc.Time())
	if sub := sc.quota.Limits(); sub != nil && sub.HasRates() {
		quota.SetHeaders(&rc.Response.Header, sub, sc.quota.Key(), s == router.SurfaceMessages, time.Now())
	}
	if ok {
		return true
	}
	res := sc.quota.Key()
	if res.Unavailable {
		writeSurfaceError(rc, s, fasthttp.StatusServiceUnavailable, "the quota store is unavailable; try again shortly",
			upstream.TypeUpstream, quota.CodeQuotaStoreUnavailable)
		return false
	}
	code, what := quota.CodeKeyRateLimited, "rate limit"
	if !res.Denied.Rate() {
		code, what = quota.CodeKeyBudgetExceeded, "budget"
	}
	if res.TooLarge {
		// It can never fit: no Retry-After would be true (docs/quotas.md,
		// Cached tokens).
		writeSurfaceError(rc, s, fasthttp.StatusTooManyRequests, sc.quota.TooLargeMessage(), upstream.TypeRateLimit, code)
		return false
	}
	var buf [20]byte
	rc.Response.Header.SetBytesV(fasthttp.HeaderRetryAfter, strconv.AppendInt(buf[:0], quota.RetryAfterSeconds(res.RetryAfter), 10))
	writeSurfaceError(rc, s, fasthttp.StatusTooManyRequests, "this key is over its "+what+" "+res.Denied.String(),
		upstream.TypeRateLimit, code)
	return false
}

// takeQuota moves the request's quota state into the tracker, which
// settles it when the answer ends (for a stream, after the handler).
func (tr *tracker) takeQuota(q *quota.Request) {
	tr.quota = *q
	*q = quota.Request{}
}

// settleQuota settles the tracked request's quota state against res, which
// ended at now.
func (tr *tracker) settleQuota(res upstream.Result, now time.Time) {
	if !tr.quota.Active() {
		return
	}
	name := ""
	if res.Target != nil {
		name = res.Target.Name
	}
	spend := tr.quota.Finish(name, res.Class == upstream.ClassOK, quotaUsage(res.Usage), now)
	if spend >= 0 {
		tr.entry.Spend, tr.entry.HasSpend = spend, true
	}
}

// quotaUsage is u in the four parts quotas meter (docs/quotas.md, Cached
// tokens).
func quotaUsage(u upstream.Usage) quota.Usage {
	return quota.Usage{Input: u.Input(), CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Output: u.Completion, Known: u.Known()}
}

// storeDown turns a walk whose members were all skipped for their quota
// into 503 quota_store_unavailable when the reason was the store failing
// with on_store_failure: deny (a skip could not know the member's room).
func storeDown(rc *fasthttp.RequestCtx, s router.Surface, q *quota.Request, res *upstream.Result) {
	if res.Class != upstream.ClassQuota || !q.StoreDown() {
		return
	}
	rc.Response.Header.Del(fasthttp.HeaderRetryAfter)
	writeSurfaceError(rc, s, fasthttp.StatusServiceUnavailable, "the quota store is unavailable; try again shortly",
		upstream.TypeUpstream, quota.CodeQuotaStoreUnavailable)
	res.Status = fasthttp.StatusServiceUnavailable
}
