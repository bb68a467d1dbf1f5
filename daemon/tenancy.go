package daemon

import (
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/tenancy"
)

// attachOwners gives the Gateway its store of response owners (docs/residency.md,
// Responses stay with their tenant), kept in the quota store: with quotas.store: redis the
// quota store's client under quotas.redis.key_prefix, shared by every
// replica; else this process's memory. Used only when the served
// configuration has client keys. Restart-only, like the quota store.
func (d *Daemon) attachOwners(cfg *config.Config) {
	if c := d.quotas.Client(); c != nil {
		d.gw.Owners = tenancy.NewRedis(c, cfg.Quotas.Redis.KeyPrefix)
	} else {
		d.gw.Owners = tenancy.NewMemory(0, nil)
	}
	log := d.log
	d.gw.OwnerFailed = func(err error) {
		log.Warn().Err(err).Msg("response owners: cannot record a response id; a follow-up naming it will get 404 response_not_found")
	}
}
