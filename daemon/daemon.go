// Package daemon runs the gateway process: it loads the configuration,
// serves it, reloads it on SIGHUP and drains on SIGTERM/SIGINT (docs/configuration.md, Command line;
// Reload and shutdown). It is the only place that owns the listener, the fasthttp.Server,
// the upstream.Pool and the hotpath.Gateway together.
//
// Daemon is the in-process form (tests drive it directly); Run wraps it
// with the process's signals and is what `switchyard serve` calls.
package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/admin"
	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/batch"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/deadline"
	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/responsesws"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// Reload results, as counted in metrics and returned by Daemon.Reload.
const (
	// ReloadSuccess means a new configuration was validated, built and
	// swapped in.
	ReloadSuccess = telemetry.ReloadSuccess
	// ReloadUnchanged means the file's bytes were those of the current
	// configuration; nothing was rebuilt. (A changed environment variable
	// behind an unchanged file is therefore not picked up by a reload.)
	ReloadUnchanged = telemetry.ReloadUnchanged
	// ReloadFailure means the file could not be read, was invalid, or could
	// not be built; the previous configuration keeps serving.
	ReloadFailure = telemetry.ReloadFailure
)

// buildState is hotpath.Build; tests replace it to make a reload's build
// fail or panic, which a validated configuration never does.
var buildState = hotpath.Build

// ErrInvalidConfig is returned (wrapped) by New when the configuration file
// is unreadable or invalid; each problem has already been logged.
var ErrInvalidConfig = errors.New("invalid configuration")

// Daemon is one running gateway: its configuration file, the current State
// behind the Gateway, the Pool of per-target state that outlives reloads,
// and the fasthttp.Server.
//
// Concurrency: Reload is safe to call from any goroutine and calls are
// serialized (one reload runs at a time, in call order of the lock).
// Serve runs once; Shutdown may be called concurrently with Serve and
// Reload. The zero value is not usable; call New.
type Daemon struct {
	path   string // config file, read again on every Reload
	listen string // -listen override; "" = server.listen of the first config
	bind   string // the address Listen binds: listen, else the first server.listen
	// reduceMemory is the first config's server.reduce_memory_usage: the
	// server is built once, so it holds until a restart.
	reduceMemory bool

	log zerolog.Logger // built from the first config's log block; fixed after New
	// logCfg is that log block: the one in effect until a restart, whatever
	// later reloads say.
	logCfg config.Log
	pool   *upstream.Pool

	// lnMu guards ln, the listener Serve was given, and down, set by
	// Shutdown: a Shutdown that comes before Serve has handed ln to the
	// server must still end Serve (fasthttp only closes the listeners it
	// has registered).
	lnMu sync.Mutex
	ln   net.Listener
	down bool
	gw   *hotpath.Gateway
	srv  *fasthttp.Server
	// ws serves Responses API sockets through srv (docs/api.md).
	ws  *responsesws.Server
	tel tele // metrics and access log hooks
	// quotas counts rate limits and budgets; quotaCfg is the config whose
	// quotas.store and quotas.redis it was built from (restart-only).
	quotas   *quota.Quotas
	quotaCfg *config.Config
	audit    *audit.Log // nil without an audit block
	// batches serves the batch APIs.
	batches *batch.Server

	// reloadMu serializes Reload and config_watch checks; hash is the
	// SHA-256 of the bytes of the configuration currently served, seen that
	// of the bytes the last reload or check read (seenUnreadable when it
	// could not read them), both written under reloadMu.
	reloadMu sync.Mutex
	hash     string
	seen     string
	// watchChecks counts config_watch checks (tests read it).
	watchChecks atomic.Int64

	addr atomic.Pointer[net.Addr] // set by Listen
}

// New loads the configuration at cfgPath and builds everything needed to
// serve it, without listening. listen, when not empty, overrides
// server.listen. Log lines go to logOut (os.Stderr in the process, through a
// telemetry.LogWriter whose dropped lines /metrics then counts): before
// the configuration loads as JSON at info level, afterwards as the config's
// log block says.
//
// An unreadable or invalid file logs every problem (one line each) and
// returns an error wrapping ErrInvalidConfig.
func New(cfgPath, listen string, logOut io.Writer) (*Daemon, error) {
	boot := bootLogger(logOut)
	data, err := config.ReadFile(cfgPath)
	if err != nil {
		boot.Error().Str("file", cfgPath).Err(err).Msg("cannot read the configuration")
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	cfg, err := config.Parse(cfgPath, data, os.LookupEnv)
	if err != nil {
		logConfigError(boot, cfgPath, err, "the configuration is invalid; not starting")
		return nil, fmt.Errorf("%w: %s", ErrInvalidConfig, cfgPath)
	}
	log, err := telemetry.NewLogger(cfg.Log.Level, cfg.Log.Format, logOut)
	if err != nil { // validation refuses bad values; this guards the invariant
		boot.Error().Err(err).Msg("cannot build the logger")
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	d := &Daemon{
		path:   cfgPath,
		listen: listen,
		log:    log,
		logCfg: cfg.Log,
		pool:   upstream.NewPool(),
		hash:   hashOf(data),
		seen:   hashOf(data),

		reduceMemory: cfg.Server.ReduceMemoryUsage,
	}
	d.bind = listen
	if d.bind == "" {
		d.bind = cfg.Server.Listen
	}
	d.tel = newTelemetry(cfg, log)
	if lw, ok := logOut.(*telemetry.LogWriter); ok { // the process's stderr (run)
		d.tel.metrics.AddSeries(lw.WritePrometheus)
	}
	if d.tel.console, err = newConsole(cfg, log); err != nil {
		log.Error().Err(err).Msg("cannot set up tracing; not starting")
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	d.tel.console.reloaded(admin.Reload{Time: time.Now().UTC(), Result: "start", Hash: d.hash})
	st, err := hotpath.Build(cfg, d.pool, time.Now())
	if err != nil {
		log.Error().Err(err).Msg("cannot build the routing state; not starting")
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if d.quotas, err = newQuotas(cfg, log); err != nil {
		log.Error().Err(err).Msg("cannot build the quota store; not starting")
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	d.quotaCfg = cfg
	d.tel.metrics.AddSeries(d.quotas.Metrics().WritePrometheus)
	st.Quota = d.quotas.Plan(cfg)
	d.gw = hotpath.New(st)
	if d.tel.console != nil {
		d.tel.console.quotas = consoleQuotas{d.gw}
	}
	d.tel.attach(d.gw, log)
	d.attachOwners(cfg)
	d.attachBatches(cfg)
	if err := d.openAudit(cfg); err != nil {
		log.Error().Err(err).Msg("cannot open the audit log; not starting")
		return nil, fmt.Errorf("%w: audit: %v", ErrInvalidConfig, err)
	}
	d.tel.targets(st)
	d.srv = hotpath.NewServer(d.gw, fasthttpLogger{log.With().Str("component", "fasthttp").Logger()}, d.reduceMemory)
	d.ws = responsesws.New(d.srv, func() responsesws.Limits {
		st := d.gw.Load()
		return responsesws.Limits{WebSocket: st.Config.Server.WebSocket, MaxRequestBytes: st.MaxRequestBytes()}
	}, log)
	d.gw.ResponsesSocket = d.ws.Upgrade
	warnOpen(log, d.bind, cfg)
	log.Info().Str("file", cfgPath).Str("config_hash", d.hash).
		Int("rules", len(cfg.Strategy.Conditions)).Int("targets", len(cfg.Targets)).
		Msg("configuration loaded")
	return d, nil
}

// Gateway returns the Gateway the daemon serves (tests read its State).
func (d *Daemon) Gateway() *hotpath.Gateway { return d.gw }

// Quotas returns the daemon's quota runtime (its Client is the shared
// Redis connection with store: redis).
func (d *Daemon) Quotas() *quota.Quotas { return d.quotas }

// Pool returns the daemon's upstream pool (tests inspect its size).
func (d *Daemon) Pool() *upstream.Pool { return d.pool }

// ListenAddress returns the address Listen binds: the -listen override, else
// server.listen of the configuration loaded by New (a reload never changes
// it; see Reload).
func (d *Daemon) ListenAddress() string {
	return d.bind
}

// Listen binds ListenAddress over TCP.
func (d *Daemon) Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", d.ListenAddress())
	if err != nil {
		return nil, err
	}
	a := ln.Addr()
	d.addr.Store(&a)
	return ln, nil
}

// Addr returns the address the listener bound (with the real port when
// the configured one was 0), or nil before Listen or Serve.
func (d *Daemon) Addr() net.Addr {
	if a := d.addr.Load(); a != nil {
		return *a
	}
	return nil
}

// Serve serves ln until Shutdown; it returns nil after Shutdown, else the
// error that stopped the server. It logs the address it serves on.
func (d *Daemon) Serve(ln net.Listener) error {
	d.lnMu.Lock()
	if d.down {
		d.lnMu.Unlock()
		return ln.Close()
	}
	d.ln = ln
	d.lnMu.Unlock()
	a := ln.Addr()
	d.addr.Store(&a)
	d.gw.SetListenAddr(a)
	d.log.Info().Str("addr", a.String()).Msg("serving")
	// Deadlines are armed lazily: a keep-alive request re-arms the
	// server's read and write timeouts to nearly where the last one left
	// them (see package deadline).
	err := d.srv.Serve(deadline.Listener(ln))
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Shutdown drains the server: /readyz answers 503 from this moment (run
// turns it off server.drain_delay earlier), the listener closes, idle keep-alive connections are closed, and requests in
// progress — including streams being relayed — run to their end. It
// returns nil when every connection finished, or ctx.Err() when ctx ended
// first (the remaining connections are then left running; the process is
// expected to exit).
//
// How fasthttp drains (v1.78 Server.ShutdownWithContext): it closes the
// listeners, then every 100 ms closes connections that are idle between
// requests and returns once no connection is open. A connection writing a
// SetBodyStreamWriter body is not idle, so a stream keeps Shutdown waiting
// until its last byte; with CloseOnShutdown the connection closes after the
// response it is serving.
func (d *Daemon) Shutdown(ctx context.Context) error {
	d.gw.SetDraining(true)
	defer d.stopConsole(ctx)
	d.lnMu.Lock()
	d.down = true
	if d.ln != nil {
		d.ln.Close() // fasthttp closes it too once registered; a second Close is harmless
	}
	d.lnMu.Unlock()
	// Sockets are hijacked connections, which the server no longer
	// counts: they drain on their own (each finishes its response, then
	// closes with 1001), while their bridged responses keep the server's
	// drain waiting.
	sockets := make(chan error, 1)
	go func() { sockets <- d.ws.Shutdown(ctx) }()
	err := d.srv.ShutdownWithContext(ctx)
	if errors.Is(err, net.ErrClosed) {
		err = nil // the listener closed above; the drain itself ran to its end
	}
	if werr := <-sockets; err == nil {
		err = werr
	}
	return err
}

// ShutdownTimeout is server.shutdown_timeout of the configuration served
// now (a reload may change it).
func (d *Daemon) ShutdownTimeout() time.Duration {
	return d.gw.Load().Config.Server.ShutdownTimeout
}

// Reload reads the configuration file again and, when its bytes changed and
// it is valid, swaps it in with one atomic store (targets with the same
// identity keep their state); otherwise it logs every problem and keeps the
// previous configuration. It returns one of the Reload* results, also
// recorded in metrics. Settings that need a restart are warned about and
// left as they were (docs/design.md). Safe for concurrent use; serialized.
func (d *Daemon) Reload() string {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	data, err := config.ReadFile(d.path)
	return d.reloadLocked("", data, err)
}

// reloadLocked is Reload of data, the file's bytes as just read (readErr
// when they could not be), with reloadMu held. trigger, when not empty,
// names what asked for it in every log line ("SIGHUP", "config_watch").
func (d *Daemon) reloadLocked(trigger string, data []byte, readErr error) (result string) {
	now := time.Now()
	lc := d.log.With().Str("file", d.path)
	if trigger != "" {
		lc = lc.Str("trigger", trigger)
	}
	log := lc.Logger()
	// A panic while building a configuration is a bug in the gateway, but
	// it must not turn an operator's SIGHUP into an outage: log it and keep
	// serving the previous configuration, which was never replaced (the
	// only publication is the Store below, after everything is built).
	defer func() {
		if p := recover(); p != nil {
			log.Error().Str("panic", fmt.Sprint(p)).Bytes("stack", debug.Stack()).
				Msg("BUG: config reload panicked; keeping the configuration served")
			// Drop Pool entries a half-done build created.
			d.pool.Retain(d.gw.Load().Targets)
			d.tel.reload(ReloadFailure, d.hash, now, fmt.Sprint("BUG: the reload panicked: ", p))
			result = ReloadFailure
		}
	}()

	if readErr != nil {
		d.seen = seenUnreadable
		log.Error().Err(readErr).Msg("config reload failed: cannot read the file; keeping the previous configuration")
		d.tel.reload(ReloadFailure, d.hash, now, readErr.Error())
		return ReloadFailure
	}
	hash := hashOf(data)
	d.seen = hash
	if hash == d.hash {
		log.Info().Str("config_hash", hash).Msg("config reload skipped: file unchanged")
		d.tel.reload(ReloadUnchanged, d.hash, now)
		return ReloadUnchanged
	}
	cfg, err := config.Parse(d.path, data, os.LookupEnv)
	if err != nil {
		logConfigError(log, d.path, err, "config reload failed; keeping the previous configuration")
		d.tel.reload(ReloadFailure, d.hash, now, problemLines(err)...)
		return ReloadFailure
	}
	old := d.gw.Load()
	st, err := buildState(cfg, d.pool, now)
	if err != nil {
		log.Error().Err(err).Msg("config reload failed: cannot build the routing state; keeping the previous configuration")
		// Build may have added Pool entries for new identities; drop them.
		d.pool.Retain(old.Targets)
		d.tel.reload(ReloadFailure, d.hash, now, err.Error())
		return ReloadFailure
	}
	st.Quota = d.quotas.Plan(cfg) // counters are kept by name
	warnQuotaRestart(log, d.quotaCfg, cfg)
	d.gw.Store(st) // the one publication: requests load it once each
	d.hash = hash
	d.pool.Retain(st.Targets)
	d.tel.targets(st)
	d.tel.reload(ReloadSuccess, hash, now)
	d.warnRestartOnly(log, cfg)
	d.warnConsoleRestartOnly(log, cfg)
	if old.Config.Auth.Enabled() {
		warnOpen(log, d.bind, cfg) // a reload that drops every key opens the gateway
	}
	log.Info().Str("config_hash", hash).
		Int("rules", len(cfg.Strategy.Conditions)).Int("targets", len(cfg.Targets)).
		Int("pool_identities", d.pool.Len()).
		Msg("configuration reloaded")
	return ReloadSuccess
}

// warnRestartOnly logs a warning for each restart-only setting whose value
// in cfg differs from the one in effect: the address bound,
// reduce_memory_usage and the log block of the start, not those of the
// previous reload (which never took effect either). So every reload of a
// file that still differs warns again, and reverting the file to the
// running value is silent.
func (d *Daemon) warnRestartOnly(log zerolog.Logger, cfg *config.Config) {
	warn := func(path, was, now string) {
		log.Warn().Str("setting", path).Str("running", was).Str("in_file", now).
			Msg("setting changed in the file; it takes effect only after a restart")
	}
	// With -listen the file's server.listen is not used at all.
	if d.listen == "" && d.bind != cfg.Server.Listen {
		warn("server.listen", d.bind, cfg.Server.Listen)
	}
	if d.reduceMemory != cfg.Server.ReduceMemoryUsage {
		warn("server.reduce_memory_usage", fmt.Sprint(d.reduceMemory), fmt.Sprint(cfg.Server.ReduceMemoryUsage))
	}
	if d.logCfg.Level != cfg.Log.Level {
		warn("log.level", d.logCfg.Level, cfg.Log.Level)
	}
	if d.logCfg.Format != cfg.Log.Format {
		warn("log.format", d.logCfg.Format, cfg.Log.Format)
	}
	if d.logCfg.AccessLog != cfg.Log.AccessLog {
		warn("log.access_log", fmt.Sprint(d.logCfg.AccessLog), fmt.Sprint(cfg.Log.AccessLog))
	}
}

// logConfigError logs err from config.Parse: one line per problem for a
// *config.Error (problems name paths and say what is wrong; they never
// quote a credential), else the error itself.
func logConfigError(log zerolog.Logger, file string, err error, msg string) {
	var ce *config.Error
	if !errors.As(err, &ce) {
		log.Error().Str("file", file).Err(err).Msg(msg)
		return
	}
	for _, p := range ce.Problems {
		log.Error().Str("problem", p.String()).Str("path", p.Path).Int("line", p.Line).Int("col", p.Col).Msg(msg)
	}
}

// hashOf is config.Config.Hash of data: the hex SHA-256 of the raw bytes.
func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
