package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
)

// Run is the serve command (cli.Serve): it serves the configuration at
// cfgPath (listen, when not empty, overrides server.listen) until SIGTERM
// or SIGINT, reloading it on SIGHUP, and returns the process exit code:
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
//
// One goroutine — this one — owns reloads and the drain: signals are
// handled in order, so reloads never overlap and a SIGHUP arriving during
// the drain is ignored. A second SIGTERM/SIGINT during the drain cuts it
// short.
func run(cfgPath, listen string, logOut io.Writer, sigs <-chan os.Signal, started func(*Daemon)) int {
	d, err := New(cfgPath, listen, logOut)
	if err != nil {
		return 1 // New logged why
	}
	ln, err := d.Listen()
	if err != nil {
		d.log.Error().Err(err).Str("listen", d.ListenAddress()).Msg("cannot listen")
		return 1
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	if started != nil {
		started(d)
	}

	for {
		select {
		case err := <-served:
			// Serve only returns by itself on a listener failure.
			d.log.Error().Err(err).Msg("server stopped")
			return 1
		case s := <-sigs:
			if s != syscall.SIGTERM && s != os.Interrupt {
				d.log.Info().Str("signal", s.String()).Msg("reloading the configuration")
				d.Reload()
				continue
			}
			return d.drain(s, sigs, served)
		}
	}
}

// drain shuts the server down after signal s and returns the exit code, 0.
func (d *Daemon) drain(s os.Signal, sigs <-chan os.Signal, served <-chan error) int {
	timeout := d.ShutdownTimeout()
	d.log.Info().Str("signal", s.String()).Str("shutdown_timeout", timeout.String()).
		Msg("draining: readiness off, listener closing, in-flight requests finishing")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Shutdown(ctx) }()
	for {
		select {
		case err := <-done:
			<-served // Serve returns as soon as the listener is closed
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
			if s2 == syscall.SIGTERM || s2 == os.Interrupt {
				d.log.Warn().Str("signal", s2.String()).Msg("second signal during the drain; stopping now")
				cancel()
				continue
			}
			d.log.Info().Str("signal", s2.String()).Msg("draining; reload ignored")
		}
	}
}
