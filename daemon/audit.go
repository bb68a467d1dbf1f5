package daemon

import (
	"os"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
)

// openAudit opens the audit log of cfg (none without audit.path) and
// hooks it to the Gateway: every finished request that passed the key
// check (with auth off: every API request) becomes a line, and requests
// are refused while the writer is behind. The audit block is read at
// start only.
func (d *Daemon) openAudit(cfg *config.Config) error {
	if cfg.Audit.Path == "" {
		return nil
	}
	key, err := audit.ParsePrivateKey(cfg.Audit.SigningKey)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	l, err := audit.Open(audit.Options{Path: cfg.Audit.Path, Key: key, CheckpointEvery: cfg.Audit.CheckpointEvery,
		MaxFileBytes: int64(cfg.Audit.MaxFileBytes), Replica: host})
	if err != nil {
		return err
	}
	d.audit = l
	g := d.gw
	next := g.Finished
	g.Finished = func(e *telemetry.Entry) {
		if next != nil {
			next(e)
		}
		if e.Key == "" && (e.Surface >= router.NumSurfaces || g.Load().Config.Auth.Enabled()) {
			return // not authenticated, or not an API request
		}
		hash := e.ConfigHash
		if hash == "" {
			hash = g.Load().Config.Hash
		}
		l.Add(e, hash)
	}
	g.AuditBehind = l.Behind
	d.log.Info().Str("path", cfg.Audit.Path).Msg("audit log open")
	return nil
}

// closeAudit writes the audit log's last lines and final checkpoint.
func (d *Daemon) closeAudit() {
	if d.audit == nil {
		return
	}
	if err := d.audit.Close(); err != nil {
		d.log.Error().Err(err).Msg("audit log: closing failed")
	}
}
