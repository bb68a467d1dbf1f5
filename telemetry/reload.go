package telemetry

import (
	"strconv"
	"time"
)

// Reload results, the values of switchyard_config_reloads_total's result
// label.
const (
	// ReloadSuccess: a new configuration was validated and swapped in.
	ReloadSuccess = "success"
	// ReloadFailure: the file could not be read or was invalid; the
	// previous configuration keeps serving.
	ReloadFailure = "failure"
	// ReloadUnchanged: the file's hash equals the serving configuration's;
	// nothing was swapped.
	ReloadUnchanged = "unchanged"
)

const numReloadResults = 3

var reloadResults = [numReloadResults]string{ReloadSuccess, ReloadFailure, ReloadUnchanged}

// hashLabelLen is how much of the config hash switchyard_config_info shows.
const hashLabelLen = 12

// configState is what the config gauges report. Guarded by Metrics.mu.
type configState struct {
	// reported is false until Loaded or Reload is first called: the config
	// gauges are absent until then.
	reported bool
	lastOK   bool
	lastAt   time.Time
	// hash is the serving configuration's hash prefix ("" = unknown).
	hash string
}

// Loaded records the configuration loaded at startup: hash (config.Config
// Hash, hex SHA-256; the first 12 characters are shown) becomes
// switchyard_config_info, the last reload counts as successful at now.
// No reload is counted.
func (m *Metrics) Loaded(hash string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg = configState{reported: true, lastOK: true, lastAt: now, hash: hashPrefix(hash)}
}

// Reload records a reload attempt at now: it counts it by result (one of
// ReloadSuccess, ReloadFailure, ReloadUnchanged; any other value is
// counted as a failure so the label stays bounded), sets
// switchyard_config_last_reload_success (0 after a failure) and
// switchyard_config_last_reload_timestamp_seconds, and, unless the reload
// failed, takes hash (the serving config's Hash) for switchyard_config_info.
// After a failure config_info keeps the hash of the configuration still
// serving, and hash is ignored.
func (m *Metrics) Reload(result string, hash string, now time.Time) {
	i := 1 // ReloadFailure
	for j, r := range reloadResults {
		if r == result {
			i = j
		}
	}
	m.reloads[i].Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.reported = true
	m.cfg.lastAt = now
	m.cfg.lastOK = reloadResults[i] != ReloadFailure
	if m.cfg.lastOK && hash != "" {
		m.cfg.hash = hashPrefix(hash)
	}
}

func hashPrefix(h string) string {
	if len(h) > hashLabelLen {
		return h[:hashLabelLen]
	}
	return h
}

// appendConfigGauges appends the config gauges once a config was reported.
func (m *Metrics) appendConfigGauges(b []byte) []byte {
	m.mu.Lock()
	c := m.cfg
	m.mu.Unlock()
	if !c.reported {
		return b
	}
	if c.hash != "" {
		b = appendMetadata(b, famInfo, "gauge")
		b = append(b, famInfo+`{hash=`...)
		b = appendLabelValue(b, c.hash)
		b = append(b, "} 1\n"...)
	}
	b = appendMetadata(b, famReloadOK, "gauge")
	b = append(b, famReloadOK+" "...)
	if c.lastOK {
		b = append(b, "1\n"...)
	} else {
		b = append(b, "0\n"...)
	}
	b = appendMetadata(b, famReloadTS, "gauge")
	b = append(b, famReloadTS+" "...)
	b = strconv.AppendFloat(b, float64(c.lastAt.UnixMilli())/1e3, 'f', -1, 64)
	return append(b, '\n')
}
