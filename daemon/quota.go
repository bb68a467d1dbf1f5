package daemon

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/admin"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/quota"
)

// newQuotas builds the quota runtime for cfg (docs/quotas.md). With
// store: redis it connects once; the client (Quotas.Client) is the one
// everything kept "in the quota store" shares. A Redis that cannot be
// reached yet is not fatal: requests count in the failure mode until it
// answers. The store and its connection are restart-only.
func newQuotas(cfg *config.Config, log zerolog.Logger) (*quota.Quotas, error) {
	ql := log.With().Str("component", "quota").Logger()
	if cfg.Quotas.Store != config.StoreRedis {
		return quota.New(context.Background(), cfg, nil, ql), nil
	}
	client, err := quota.Connect(cfg.Quotas.Redis)
	if err != nil {
		return nil, err
	}
	ql.Info().Str("redis", quota.RedactURL(cfg.Quotas.Redis.URL)).Str("on_store_failure", cfg.Quotas.OnStoreFailure).
		Msg("quota store: redis")
	return quota.New(context.Background(), cfg, client, ql), nil
}

// warnQuotaRestart warns when a reload changes the quota store, which
// needs a restart (the running one keeps counting).
func warnQuotaRestart(log zerolog.Logger, running, file *config.Config) {
	a, b := &running.Quotas, &file.Quotas
	if a.Store != b.Store || a.Redis.URL != b.Redis.URL || a.Redis.Timeout != b.Redis.Timeout || a.Redis.KeyPrefix != b.Redis.KeyPrefix {
		log.Warn().Str("setting", "quotas.store, quotas.redis").
			Msg("setting changed in the file; it takes effect only after a restart")
	}
}

// consoleQuotas is the console's view of the quota store (admin.Quotas):
// the room of the State being served, read without a store call.
type consoleQuotas struct{ gw *hotpath.Gateway }

func (c consoleQuotas) use(name string, target bool) *admin.QuotaUse {
	st := c.gw.Load()
	if st == nil || st.Quota == nil {
		return nil
	}
	room, ok := st.Quota.RoomOf(name, target)
	if !ok {
		return nil
	}
	u := &admin.QuotaUse{}
	for k := quota.Kind(0); k < quota.NumKinds; k++ {
		lim := room.Limit[k]
		if lim <= 0 {
			continue
		}
		left := lim // unknown before the first check: shown as unused
		if room.Known {
			left = min(max(room.Left[k], 0), lim)
		}
		l := admin.QuotaLimit{Name: k.String(), Limit: float64(lim), Used: float64(lim - left), Remaining: float64(left)}
		if k.Spend() {
			l.Limit, l.Used, l.Remaining = l.Limit/quota.MicroUSD, l.Used/quota.MicroUSD, l.Remaining/quota.MicroUSD
		}
		u.Limits = append(u.Limits, l)
	}
	return u
}

// KeyQuota implements admin.Quotas.
func (c consoleQuotas) KeyQuota(key string) *admin.QuotaUse { return c.use(key, false) }

// TargetQuota implements admin.Quotas.
func (c consoleQuotas) TargetQuota(target string) *admin.QuotaUse { return c.use(target, true) }

// Spend implements admin.Quotas: the day's and month's spend of a key with
// spend budgets (the only spend counted per window).
func (c consoleQuotas) Spend(key string) (day, month float64, ok bool) {
	u := c.use(key, false)
	if u == nil {
		return 0, 0, false
	}
	for _, l := range u.Limits {
		switch l.Name {
		case quota.SpendPerDay.String():
			day, ok = l.Used, true
		case quota.SpendPerMonth.String():
			month, ok = l.Used, true
		}
	}
	return day, month, ok
}
