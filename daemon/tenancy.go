package daemon

import (
	"github.com/switchyard/switchyard/tenancy"
)

// attachOwners gives the Gateway its store of response owners (README,
// Proving residency): in this process's memory. Used only when the served
// configuration has client keys. With several replicas it must be the
// Redis store shared through quotas.redis (see README).
func (d *Daemon) attachOwners() {
	d.gw.Owners = tenancy.NewMemory(0, nil)
	log := d.log
	d.gw.OwnerFailed = func(err error) {
		log.Warn().Err(err).Msg("response owners: cannot record a response id; a follow-up naming it will get 404 response_not_found")
	}
}
