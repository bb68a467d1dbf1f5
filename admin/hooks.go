package admin

import "github.com/switchyard/switchyard/config"

// Hooks into features that live in other packages: the quota store
// (docs/quotas.md) and residency labels. Quotas default to the served
// configuration's quota plan (see planQuotas); the console shows null
// where a key or target has no limits.

// Quotas reads the live quota state for the console. Its methods must be
// cheap (the status is built at most a few times a second) and safe for
// concurrent use; a nil result means "no limit configured".
type Quotas interface {
	// KeyQuota returns key's limits and their current use.
	KeyQuota(key string) *QuotaUse
	// TargetQuota returns target's provider limits and the room left.
	TargetQuota(target string) *QuotaUse
	// Spend returns key's spend in USD in the current day and month
	// windows; ok is false when the config prices nothing for it.
	Spend(key string) (day, month float64, ok bool)
}

// QuotaUse is a set of limits and how much of each is used: one entry per
// configured limit ("requests_per_minute", "tokens_per_day",
// "spend_per_month_usd", ...).
type QuotaUse struct {
	Limits []QuotaLimit `json:"limits"`
}

// QuotaLimit is one limit: its name, the limit, what is used in the
// current window (or bucket) and when it next has room in full.
type QuotaLimit struct {
	Name  string  `json:"name"`
	Limit float64 `json:"limit"`
	Used  float64 `json:"used"`
	// Remaining is Limit - Used, floored at 0.
	Remaining float64 `json:"remaining"`
}

// residencyOf returns a target's residency label ("" = none).
func residencyOf(t *config.Target) string { return t.Residency }
