package daemon

import (
	"time"

	"github.com/switchyard/switchyard/config"
)

// seenUnreadable is Daemon.seen after a read of the file failed: a check
// that fails to read it again stays quiet, one that reads it reloads.
const seenUnreadable = "unreadable"

// checkConfig is one server.config_watch check: it reads the file (opening
// it by name, so a Kubernetes ConfigMap volume's "..data" symlink swap is
// followed) and reloads it, exactly as SIGHUP does, only when its bytes
// differ from those the last reload or check read. So an invalid file is
// reported and counted once, not at every check, and a file that cannot
// be read is reported once until it can. It returns the reload result, or
// "" when nothing changed. It holds no file or goroutine after it returns.
func (d *Daemon) checkConfig() string {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	d.watchChecks.Add(1)
	data, err := config.ReadFile(d.path)
	switch {
	case err != nil && d.seen == seenUnreadable:
		return ""
	case err == nil && hashOf(data) == d.seen:
		return ""
	}
	return d.reloadLocked("config_watch", data, err)
}

// watchInterval is server.config_watch of the configuration served now
// (0 = off), through watchEvery.
func (d *Daemon) watchInterval() time.Duration {
	return watchEvery(d.gw.Load().Config.Server.ConfigWatch)
}

// watchEvery maps the configured interval to the one used; tests replace
// it to run thousands of checks in seconds (validation refuses intervals
// under config.MinConfigWatch).
var watchEvery = func(d time.Duration) time.Duration { return d }

// watchTimer schedules config_watch checks for run's loop: one timer for
// the process, re-armed after every check and every reload, so a reload
// that changes or clears server.config_watch takes effect at once and no
// goroutine or timer is made per check.
type watchTimer struct {
	t *time.Timer
	C <-chan time.Time // nil while the watch is off: never ready in a select
}

func newWatchTimer() *watchTimer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &watchTimer{t: t}
}

// arm schedules the next check after every (0: none).
func (w *watchTimer) arm(every time.Duration) {
	w.t.Stop()
	if every <= 0 {
		w.C = nil
		return
	}
	w.t.Reset(every)
	w.C = w.t.C
}

// stop cancels the next check.
func (w *watchTimer) stop() { w.arm(0) }
