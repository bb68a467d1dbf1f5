package telemetry

// famResidencyBlocks counts walks the residency guard stopped (docs/residency.md,
// The guard in the walk); by construction it stays 0.
const famResidencyBlocks = "switchyard_residency_guard_blocks_total"

func init() {
	familyHelp[famResidencyBlocks] = "Walks the residency guard stopped before calling a target outside the client key's residency, by key and target (by construction 0)."
}

// ResidencyBlocked counts one walk the residency guard stopped
// (switchyard_residency_guard_blocks_total); the caller logs it.
func (m *Metrics) ResidencyBlocked(key, target string) {
	m.set.GetOrCreateCounter(seriesName(famResidencyBlocks, "key", key, "target", target)).Inc()
}
