package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/admin"
	"github.com/switchyard/switchyard/cli"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/tracing"
)

// console connects the daemon to the operator's console (package admin)
// and to tracing. Both are set up from the first configuration and are
// restart-only, like server.listen. A nil *console (both off) does nothing.
type console struct {
	tracer *tracing.Tracer // nil = tracing off
	// rec, hist and srv are nil when the console is off.
	rec  *admin.Recorder
	hist *admin.History
	srv  *admin.Server
	cfg  config.Admin // the admin block it started with
	// tracing is the tracing block it started with.
	tracing config.Tracing
	ln      net.Listener
	// quotas feeds the console's quota columns (see consoleQuotas).
	quotas admin.Quotas
}

// newConsole builds the console and tracer cfg asks for; nil when neither.
func newConsole(cfg *config.Config, log zerolog.Logger) (*console, error) {
	if !cfg.Admin.Enabled() && !cfg.Tracing.Enabled() {
		return nil, nil
	}
	c := &console{cfg: cfg.Admin, tracing: cfg.Tracing}
	tr, err := tracing.New(cfg.Tracing, cli.CurrentVersion())
	if err != nil {
		return nil, err
	}
	c.tracer = tr
	if cfg.Admin.Enabled() {
		c.rec = admin.NewRecorder(keyNames(cfg))
		c.hist = &admin.History{}
	}
	return c, nil
}

func keyNames(cfg *config.Config) []string {
	names := make([]string, len(cfg.Auth.Keys))
	for i, k := range cfg.Auth.Keys {
		names[i] = k.Name
	}
	return names
}

// attach sets the Gateway's tracer and builds the console's server.
func (c *console) attach(g *hotpath.Gateway, log zerolog.Logger) {
	if c == nil {
		return
	}
	g.Tracer = c.tracer
	if c.rec != nil {
		c.srv = admin.New(admin.Options{Gateway: g, Recorder: c.rec, Reloads: c.hist, Admin: c.cfg, Quotas: c.quotas,
			Version: cli.CurrentVersion(), Log: log.With().Str("component", "admin").Logger()})
	}
}

// recorder returns what the Finished hook feeds; nil when the console is off.
func (c *console) recorder() *admin.Recorder {
	if c == nil {
		return nil
	}
	return c.rec
}

// reloaded records a load or reload for the console's history.
func (c *console) reloaded(r admin.Reload) {
	if c == nil || c.hist == nil {
		return
	}
	c.hist.Add(r)
}

// served tells the console the configuration now served (key and target
// names).
func (c *console) served(cfg *config.Config) {
	if c == nil || c.rec == nil {
		return
	}
	c.rec.SetKeys(keyNames(cfg))
	targets := make([]string, len(cfg.Targets))
	for i := range cfg.Targets {
		targets[i] = cfg.Targets[i].VirtualKey
	}
	c.rec.SetTargets(targets)
}

// StartConsole binds admin.listen and serves the console on it, when the
// configuration has one; run calls it after Listen. It logs the console's URL.
func (d *Daemon) StartConsole() error {
	c := d.tel.console
	if c == nil || c.srv == nil {
		return nil
	}
	ln, err := net.Listen("tcp", c.cfg.Listen)
	if err != nil {
		return fmt.Errorf("admin.listen: %w", err)
	}
	c.ln = ln
	go func() {
		if err := c.srv.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			d.log.Error().Err(err).Msg("admin console stopped")
		}
	}()
	d.log.Info().Str("url", "http://"+ln.Addr().String()+"/").Bool("key", c.cfg.HasKey).Msg("operator's console serving")
	return nil
}

// ConsoleAddr is the console's bound address, or nil when it is off.
func (d *Daemon) ConsoleAddr() net.Addr {
	if c := d.tel.console; c != nil && c.ln != nil {
		return c.ln.Addr()
	}
	return nil
}

// stopConsole closes the console and flushes the spans still queued,
// within ctx.
func (d *Daemon) stopConsole(ctx context.Context) {
	c := d.tel.console
	if c == nil {
		return
	}
	if c.ln != nil {
		_ = c.srv.Shutdown()
	}
	if err := c.tracer.Shutdown(ctx); err != nil {
		d.log.Warn().Err(err).Msg("tracing: spans still queued were not all exported")
	}
}

// warnConsoleRestartOnly warns when a reload changes the admin or tracing
// block, which take effect only after a restart.
func (d *Daemon) warnConsoleRestartOnly(log zerolog.Logger, cfg *config.Config) {
	var was config.Admin
	wasTracing := config.Tracing{SampleRatio: 1} // the default: off
	if c := d.tel.console; c != nil {
		was, wasTracing = c.cfg, c.tracing
	}
	if was != cfg.Admin {
		log.Warn().Str("setting", "admin").Msg("setting changed in the file; it takes effect only after a restart")
	}
	if wasTracing != cfg.Tracing {
		log.Warn().Str("setting", "tracing").Msg("setting changed in the file; it takes effect only after a restart")
	}
}

// finishedHook returns the Finished function of the console, or nil.
func finishedHook(c *console) func(e *telemetry.Entry) {
	if r := c.recorder(); r != nil {
		return r.Finished
	}
	return nil
}

// problemLines returns config.Parse's error as lines, one per problem.
func problemLines(err error) []string {
	var ce *config.Error
	if !errors.As(err, &ce) {
		return []string{err.Error()}
	}
	out := make([]string, len(ce.Problems))
	for i, p := range ce.Problems {
		out[i] = p.String()
	}
	return out
}
