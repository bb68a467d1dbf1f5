// Package quota enforces rate limits and budgets (docs/quotas.md): token
// buckets per minute and UTC calendar budgets per day and month, for client
// keys and targets. Counters live in a Store: Memory (in process, the
// embedded default) or Redis (shared by every replica, one round trip per
// subject per request). Quotas wraps the store with the operator's failure
// mode (local, deny, allow) and is what the hot path calls; a Plan is the
// compiled limits of one configuration, rebuilt on reload, while counters
// are named by key or target name and the limit, so a reload keeps them.
package quota
