package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/telemetry"
)

// Run is the serve command (cli.Serve): it serves the configuration at
// cfgPath (listen, when not empty, overrides server.listen) until SIGTERM
// or SIGINT, reloading it on SIGHUP (and, with server.config_watch, when
// the file's content changes), and returns the process exit code:
// 0 after a drain (also one cut short by server.shutdown_timeout), 1 when
// the configuration is invalid or the address cannot be bound or served.
//
// The signals are registered before the configuration is read, so a SIGHUP
// or SIGTERM sent while starting is acted on once serving, never lost and
// never fatal. Logs go to stderr.
func Run(cfgPath, listen string) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	return run(cfgPath, listen, os.Stderr, sigs, nil)
}

// run is Run with its signal channel and log output injected. started, when
// not nil, is called once the daemon listens (tests take the address there).
// Log lines reach logOut through a telemetry.LogWriter, flushed before run
// returns.
//
// One goroutine — this one — owns reloads, server.config_watch checks and
// the drain: signals and checks are handled in order, so reloads never
// overlap, and a SIGHUP arriving during the drain is ignored. A second SIGTERM/SIGINT during the drain cuts it
// short.
func run(cfgPath, listen string, logOut io.Writer, sigs <-chan os.Signal, started func(*Daemon)) int {
	// Every line is written off the request path through lw, and every
	// line buffered is written before run returns, on each of its paths.
	lw := telemetry.NewLogWriter(logOut)
	defer closeLog(lw)
	d, err := New(cfgPath, listen, lw)
	if err != nil {
		return 1 // New logged why
	}
	ln, err := d.Listen()
	if err != nil {
		d.log.Error().Err(err).Str("listen", d.ListenAddress()).Msg("cannot listen")
		return 1
	}
	if err := d.StartConsole(); err != nil {
		d.log.Error().Err(err).Msg("cannot start the operator's console")
		return 1
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	if started != nil {
		started(d)
	}

	watch := newWatchTimer()
	defer watch.stop()
	watch.arm(d.watchInterval())
	for {
		select {
		case err := <-served:
			// Serve only returns by itself on a listener failure.
			d.log.Error().Err(err).Msg("server stopped")
			return 1
		case <-watch.C:
			d.checkConfig()
			watch.arm(d.watchInterval())
		case s := <-sigs:
			if !isStop(s) {
				d.log.Info().Str("signal", s.String()).Msg("reloading the configuration")
				d.reloadSignal()
				watch.arm(d.watchInterval())
				continue
			}
			watch.stop() // no reload during the drain
			return d.drain(s, sigs, served)
		}
	}
}

// drain shuts the server down after signal s and returns the exit code, 0:
// readiness off at once, the listener open for server.drain_delay, then
// closed, and in-flight requests given server.shutdown_timeout to finish.
func (d *Daemon) drain(s os.Signal, sigs <-chan os.Signal, served <-chan error) int {
	defer d.closeAudit() // after the last request: its line and a checkpoint
	srv := d.gw.Load().Config.Server
	timeout, delay := srv.ShutdownTimeout, srv.DrainDelay
	d.gw.SetDraining(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if delay > 0 {
		d.log.Info().Str("signal", s.String()).Str("drain_delay", delay.String()).Str("shutdown_timeout", timeout.String()).
			Msg("draining: readiness off; listener open for drain_delay, then closing; in-flight requests finishing")
		switch second, stopped, err := d.drainDelay(delay, sigs, served); {
		case stopped:
			// The listener failed during the delay: nothing is served any
			// more, but requests in progress may still finish.
			d.log.Error().Err(err).Msg("server stopped during drain_delay")
			served = nil
		case second:
			cancel() // stop now
		default:
			d.log.Info().Msg("drain_delay over: listener closing")
		}
	} else {
		d.log.Info().Str("signal", s.String()).Str("shutdown_timeout", timeout.String()).
			Msg("draining: readiness off, listener closing, in-flight requests finishing")
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	defer cancelTimeout()
	done := make(chan error, 1)
	go func() { done <- d.Shutdown(ctx) }()
	for {
		select {
		case err := <-done:
			if served != nil {
				<-served // Serve returns as soon as the listener is closed
			}
			switch {
			case err == nil:
				d.log.Info().Msg("drained; exiting")
			case errors.Is(err, context.DeadlineExceeded):
				d.log.Warn().Str("shutdown_timeout", timeout.String()).
					Msg("shutdown_timeout reached with requests still in flight; exiting anyway")
			case errors.Is(err, context.Canceled):
				d.log.Warn().Msg("drain cut short by a second signal; exiting")
			default:
				// A listener close error; the drain itself finished.
				if !errors.Is(err, net.ErrClosed) {
					d.log.Warn().Err(err).Msg("drained with an error closing the listener; exiting")
				}
			}
			return 0
		case s2 := <-sigs:
			if isStop(s2) {
				d.log.Warn().Str("signal", s2.String()).Msg("second signal during the drain; stopping now")
				cancel()
				continue
			}
			d.log.Info().Str("signal", s2.String()).Msg("draining; reload ignored")
		}
	}
}

// drainDelay waits out server.drain_delay with the listener still serving.
// It returns early on a second SIGTERM/SIGINT (second), or when the
// listener failed meanwhile (stopped, with Serve's error).
func (d *Daemon) drainDelay(delay time.Duration, sigs <-chan os.Signal, served <-chan error) (second, stopped bool, err error) {
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return false, false, nil
		case err := <-served:
			return false, true, err
		case s := <-sigs:
			if isStop(s) {
				d.log.Warn().Str("signal", s.String()).Msg("second signal during drain_delay; stopping now")
				return true, false, nil
			}
			d.log.Info().Str("signal", s.String()).Msg("draining; reload ignored")
		}
	}
}

// logCloseTimeout is how long the exit waits for a stalled log output to
// take the lines still buffered before giving them up.
const logCloseTimeout = 5 * time.Second

// closeLog writes every buffered log line before the process exits, giving
// a stalled output logCloseTimeout.
func closeLog(lw *telemetry.LogWriter) {
	ctx, cancel := context.WithTimeout(context.Background(), logCloseTimeout)
	defer cancel()
	_ = lw.Close(ctx) // nothing is left to tell it to
}

// isStop reports whether s asks the process to stop (SIGTERM, SIGINT).
func isStop(s os.Signal) bool { return s == syscall.SIGTERM || s == os.Interrupt }

// reloadSignal is Reload on SIGHUP (its log lines say so).
func (d *Daemon) reloadSignal() string {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	data, err := config.ReadFile(d.path)
	return d.reloadLocked("SIGHUP", data, err)
}
