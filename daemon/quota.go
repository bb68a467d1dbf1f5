package daemon

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/quota"
)

// newQuotas builds the quota runtime for cfg (README, Quotas). With
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
