package daemon

import (
	"github.com/switchyard/switchyard/batch"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/tenancy"
)

// attachBatches gives the Gateway its batch API server (docs/batches.md),
// whose owner records live in the quota store: with quotas.store: redis
// the quota store's client under quotas.redis.key_prefix, shared by every
// replica; else this process's memory. Restart-only, like the quota
// store. Spool files left by a gateway killed in the middle of an upload
// are removed first.
func (d *Daemon) attachBatches(cfg *config.Config) {
	var store tenancy.ObjectStore
	if c := d.quotas.Client(); c != nil {
		store = tenancy.NewRedisObjects(c, cfg.Quotas.Redis.KeyPrefix)
	} else {
		store = tenancy.NewMemoryObjects(0, nil)
	}
	log := d.log.With().Str("component", "batch").Logger()
	if n := batch.CleanSpools(cfg.Server.SpoolDir); n > 0 {
		log.Info().Int("files", n).Msg("removed the spool files of gateways that no longer run")
	}
	m := d.tel.metrics
	d.batches = &batch.Server{
		Gateway: d.gw,
		Store:   store,
		Log:     log,
		StoreFailed: func(err error) {
			log.Warn().Err(err).Msg("batch owners: the store failed; the call was answered 503")
		},
		Owned: func(key string, n [tenancy.NumKinds]int) {
			for k := tenancy.Kind(0); k < tenancy.NumKinds; k++ {
				m.SetBatchOwned(key, k.String(), n[k])
			}
		},
	}
	d.gw.Batches = d.batches
	d.gw.Objects = store // file ids named inside request bodies (docs/residency.md)
}

// Batches returns the batch API server (tests read its spool use).
func (d *Daemon) Batches() *batch.Server { return d.batches }
