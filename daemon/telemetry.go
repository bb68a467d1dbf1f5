package daemon

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/telemetry"
)

// tele connects the daemon to package telemetry: the metrics that observe
// walks and serve /metrics, and the record of reloads.
type tele struct {
	metrics *telemetry.Metrics
}

func newTelemetry(cfg *config.Config, _ zerolog.Logger) tele {
	m := telemetry.NewMetrics()
	m.Loaded(cfg.Hash, time.Now())
	return tele{metrics: m}
}

// attach sets the Gateway's Observer and Metrics hooks; call before serving.
func (t tele) attach(g *hotpath.Gateway) {
	g.Observer = t.metrics
	g.Metrics = t.metrics.Handler
}

// targets publishes the targets of st (at start and after each swap).
func (t tele) targets(st *hotpath.State) { t.metrics.SetTargets(st.Targets) }

// reload records a reload result and the hash served afterwards.
func (t tele) reload(result, hash string, now time.Time) { t.metrics.Reload(result, hash, now) }
