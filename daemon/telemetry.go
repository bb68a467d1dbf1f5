package daemon

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/telemetry"
)

// tele connects the daemon to package telemetry: the metrics that observe
// walks, count requests and serve /metrics; the access log; and the record
// of reloads.
type tele struct {
	metrics *telemetry.Metrics
	// access is nil when log.access_log is false (a nil AccessLog logs
	// nothing). Fixed at start: access_log needs a restart to change.
	access *telemetry.AccessLog
}

func newTelemetry(cfg *config.Config, log zerolog.Logger) tele {
	t := tele{metrics: telemetry.NewMetrics()}
	t.metrics.Loaded(cfg.Hash, time.Now())
	if cfg.Log.AccessLog {
		t.access = telemetry.NewAccessLog(log)
	}
	return t
}

// attach sets the Gateway's hooks; call before serving.
func (t tele) attach(g *hotpath.Gateway) {
	g.Observer = t.metrics
	g.Metrics = t.metrics.Handler
	m, access := t.metrics, t.access
	g.Finished = func(e *telemetry.Entry) {
		m.Request(e.Surface, e.Status)
		access.Log(e)
	}
}

// targets publishes the targets of st (at start and after each swap).
func (t tele) targets(st *hotpath.State) { t.metrics.SetTargets(st.Targets) }

// reload records a reload result and the hash served afterwards.
func (t tele) reload(result, hash string, now time.Time) { t.metrics.Reload(result, hash, now) }
