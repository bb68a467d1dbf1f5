package daemon

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/admin"
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
	// console is the operator's console and tracer; nil when both are off.
	console *console
}

func newTelemetry(cfg *config.Config, log zerolog.Logger) tele {
	t := tele{metrics: telemetry.NewMetrics()}
	t.metrics.Loaded(cfg.Hash, time.Now())
	if cfg.Log.AccessLog {
		t.access = telemetry.NewAccessLog(log)
	}
	return t
}

// attach sets the Gateway's hooks; call before serving. log receives one
// error line per recovered panic.
func (t tele) attach(g *hotpath.Gateway, log zerolog.Logger) {
	g.Observer = t.metrics
	g.Metrics = t.metrics.Handler
	m, access, rec := t.metrics, t.access, finishedHook(t.console)
	g.Finished = func(e *telemetry.Entry) {
		m.Finished(e)
		access.Log(e)
		if rec != nil {
			rec(e)
		}
	}
	t.console.attach(g, log)
	g.Panicked = func(v any, stack []byte) { logPanic(log, m, v, stack) }
	g.Fenced = func(key, target string) { logFenced(log, m, key, target) }
}

// logFenced reports a walk the residency guard stopped: an error line and
// switchyard_residency_guard_blocks_total. The load-time proof makes it
// impossible; one means a bug in the proof or the walk.
func logFenced(log zerolog.Logger, m *telemetry.Metrics, key, target string) {
	m.ResidencyBlocked(key, target)
	log.Error().Str("key", key).Str("target", target).
		Msg("BUG: the residency guard stopped a request before a target outside its key's residency (answered 500)")
}

// logPanic reports a panic recovered while serving a request (a gateway
// bug): one error line with the panic value and the goroutine's stack, and
// switchyard_panics_total. It is hotpath.Gateway.Panicked, which hears of
// panics in the handler and in committed streams' writers alike (upstream's
// PanicObserver reaches it through the Gateway's per-request tracker), so
// each panic is counted once. Nothing of the request is logged — no
// header, no body, no model — only what the panic itself carries. It must
// not panic: a value whose String or Error method panics is rendered by
// fmt as a "PANIC=" note instead.
func logPanic(log zerolog.Logger, m *telemetry.Metrics, v any, stack []byte) {
	m.Panic()
	log.Error().Str("panic", fmt.Sprint(v)).Bytes("stack", stack).
		Msg("BUG: panic while serving a request")
}

// targets publishes the targets of st (at start and after each swap).
func (t tele) targets(st *hotpath.State) {
	t.metrics.SetTargets(st.Targets)
	t.console.served(st.Config)
}

// reload records a reload result and the hash served afterwards; problems
// are a failure's messages (for the console's history).
func (t tele) reload(result, hash string, now time.Time, problems ...string) {
	t.metrics.Reload(result, hash, now)
	t.console.reloaded(admin.Reload{Time: now.UTC(), Result: result, Hash: hash, Problems: problems})
}
