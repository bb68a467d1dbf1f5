package daemon

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/mock"
)

// watchConfig routes model m to target want (a or b); both targets exist.
func watchConfig(watch, want, a, b string) string {
	return fmt.Sprintf(`
server: {listen: "127.0.0.1:1", shutdown_timeout: 10s, config_watch: %s}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: %s}
targets:
  - {virtual_key: a, provider: openai, base_url: %q, api_key: key-a}
  - {virtual_key: b, provider: openai, base_url: %q, api_key: key-b}
`, watch, want, a, b)
}

// watchBad is invalid: a rule names an undeclared target.
const watchBad = `
server: {config_watch: 200ms}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: nowhere}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: key-a}
`

// TestConfigWatchFollowsConfigMapSwap runs the built binary with
// config_watch: 200ms on a file laid out as a ConfigMap volume and, under
// bounded concurrent load, swaps the file the way kubelet does: the new
// rule serves without a signal; an invalid file is reported once (the
// failure metric moves by exactly 1 however many checks follow) while the
// old configuration keeps serving; a valid file after it is picked up; and
// no request fails throughout.
func TestConfigWatchFollowsConfigMapSwap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t, t.TempDir())
	ma := startMock(t, mock.Options{Name: "A", StreamEvents: streamEvents})
	mb := startMock(t, mock.Options{Name: "B", StreamEvents: streamEvents})
	cm := newConfigMapDir(t, watchConfig("200ms", "a", ma.BaseURL(), mb.BaseURL()))
	p := startProc(t, bin, cm.path())
	base := "http://" + p.addr

	// Bounded load: 4 workers, at most 20,000 requests each, every third a
	// stream; last target seen kept for the checks below.
	var (
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
		ok       atomic.Int64
		last     atomic.Value
	)
	c := newClient()
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20000 {
				select {
				case <-stop:
					return
				default:
				}
				stream := (i+w)%3 == 0
				a, err := chat(c, base, "m", stream)
				if err == nil && a.status != http.StatusOK {
					err = fmt.Errorf("status %d: %s", a.status, a.body)
				}
				if err == nil && stream {
					err = checkStream(a.body, streamEvents)
				}
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					continue
				}
				ok.Add(1)
				last.Store(a.target)
			}
		}()
	}
	routesTo := func(target string) func() bool {
		return func() bool { v, _ := last.Load().(string); return v == target }
	}
	waitFor(t, 10*time.Second, "requests to reach a", routesTo("a"))

	cm.update(t, watchConfig("200ms", "b", ma.BaseURL(), mb.BaseURL()))
	waitFor(t, 10*time.Second, "the watched change to route m to b", routesTo("b"))
	if !strings.Contains(p.logs.String(), `"trigger":"config_watch"`) {
		t.Errorf("the reload's log lines do not name config_watch:\n%s", p.logs)
	}

	metrics := func() string { _, m := get(t, base+"/metrics"); return m }
	if n := reloadCount(metrics(), "failure"); n != 0 {
		t.Fatalf("reload failures before the bad file: %d", n)
	}
	cm.update(t, watchBad)
	waitFor(t, 10*time.Second, "the reload failure metric", func() bool { return reloadCount(metrics(), "failure") == 1 })
	time.Sleep(time.Second) // five more checks of the same bad file
	if n := reloadCount(metrics(), "failure"); n != 1 {
		t.Errorf("reload failures after more checks of one bad file: %d, want 1", n)
	}
	if !strings.Contains(p.logs.String(), `undeclared`) && !strings.Contains(p.logs.String(), `nowhere`) {
		t.Errorf("the problem is not logged:\n%s", p.logs)
	}
	// The old configuration keeps serving: fresh answers still come from b.
	for range 20 {
		a, err := chat(c, base, "m", false)
		if err != nil || a.status != http.StatusOK || a.target != "b" {
			t.Fatalf("after the bad file: %v %d %q", err, a.status, a.target)
		}
	}

	cm.update(t, watchConfig("200ms", "a", ma.BaseURL(), mb.BaseURL()))
	waitFor(t, 10*time.Second, "a valid file after the bad one to route m to a", routesTo("a"))
	if n := reloadCount(metrics(), "success"); n != 2 {
		t.Errorf("successful reloads: %d, want 2", n)
	}

	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed; first: %s", len(failures), int64(len(failures))+ok.Load(), failures[0])
	}
	t.Logf("%d requests, 0 failed", ok.Load())
	p.stop(t, 15*time.Second)
}

// TestConfigWatchNoLeak runs thousands of checks (interval shortened to
// 1 ms) through run's loop, with ConfigMap swaps to valid and invalid files
// among them, and wants the same open file descriptors and goroutines
// afterwards as after the first checks; and each swap reloaded exactly once.
func TestConfigWatchNoLeak(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	old := watchEvery
	watchEvery = func(d time.Duration) time.Duration {
		if d > 0 {
			return time.Millisecond
		}
		return 0
	}

	ma := startMock(t, mock.Options{Name: "A"})
	mb := startMock(t, mock.Options{Name: "B"})
	cm := newConfigMapDir(t, watchConfig("1s", "a", ma.BaseURL(), mb.BaseURL()))
	sigs := make(chan os.Signal, 1)
	started := make(chan *Daemon, 1)
	exit := make(chan int, 1)
	logs := &syncBuffer{}
	go func() { exit <- run(cm.path(), "127.0.0.1:0", logs, sigs, func(d *Daemon) { started <- d }) }()
	// Stop run before watchEvery is restored, also when the test fails.
	stopRun := sync.OnceValue(func() int { sigs <- syscall.SIGTERM; return <-exit })
	defer func() { stopRun(); watchEvery = old }()
	d := <-started
	checksPast := func(n int64) func() bool { return func() bool { return d.watchChecks.Load() >= n } }
	waitFor(t, 10*time.Second, "100 checks", checksPast(100))

	fds := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	fd0, g0 := fds(), runtime.NumGoroutine()
	// No garbage collection meanwhile: an *os.File's finalizer would close
	// a leaked descriptor and hide the leak.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const swaps, checksPerSwap = 30, 150
	for i := range swaps {
		body := fmt.Sprintf("# swap %d\n", i) + watchConfig("1s", []string{"a", "b"}[i%2], ma.BaseURL(), mb.BaseURL())
		if i%3 == 2 {
			body = watchBad
		}
		cm.update(t, body)
		waitFor(t, 10*time.Second, "checks after a swap", checksPast(d.watchChecks.Load()+checksPerSwap))
	}
	checks := d.watchChecks.Load()
	if checks < swaps*checksPerSwap {
		t.Fatalf("only %d checks", checks)
	}
	waitFor(t, 5*time.Second, fmt.Sprintf("fds back to %d and goroutines to %d after %d checks", fd0, g0, checks), func() bool {
		return fds() <= fd0 && runtime.NumGoroutine() <= g0
	})
	t.Logf("%d checks: %d fds, %d goroutines (%d, %d after the first 100)", checks, fds(), runtime.NumGoroutine(), fd0, g0)

	// Each swap is one reload: 20 valid (each unlike the one served), 10
	// invalid.
	c := newClient()
	defer c.CloseIdleConnections()
	_, m := getWith(t, c, "http://"+d.Addr().String()+"/metrics")
	if s, f := reloadCount(m, "success"), reloadCount(m, "failure"); s != 20 || f != 10 {
		t.Errorf("after %d swaps: %d successful reloads and %d failed, want 20 and 10", swaps, s, f)
	}

	if code := stopRun(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestSIGHUPWithConfigWatch: with config_watch on (a long interval, so no
// check runs), SIGHUP still reloads at once and says so in its log lines.
func TestSIGHUPWithConfigWatch(t *testing.T) {
	ma := startMock(t, mock.Options{Name: "A"})
	mb := startMock(t, mock.Options{Name: "B"})
	cm := newConfigMapDir(t, watchConfig("1h", "a", ma.BaseURL(), mb.BaseURL()))
	sigs := make(chan os.Signal, 1)
	started := make(chan *Daemon, 1)
	exit := make(chan int, 1)
	logs := &syncBuffer{}
	go func() { exit <- run(cm.path(), "127.0.0.1:0", logs, sigs, func(d *Daemon) { started <- d }) }()
	d := <-started
	base := "http://" + d.Addr().String()
	cm.update(t, watchConfig("1h", "b", ma.BaseURL(), mb.BaseURL()))
	sigs <- syscall.SIGHUP
	waitFor(t, 5*time.Second, "the SIGHUP reload", func() bool {
		a, err := chat(newClient(), base, "m", false)
		return err == nil && a.target == "b"
	})
	if !strings.Contains(logs.String(), `"trigger":"SIGHUP"`) {
		t.Errorf("no SIGHUP trigger in the logs:\n%s", logs)
	}
	if n := d.watchChecks.Load(); n != 0 {
		t.Errorf("%d watch checks with a 1h interval", n)
	}
	sigs <- syscall.SIGTERM
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestConfigWatchIsReloadable: a reload that sets config_watch to 0 stops
// the checks at once; a SIGHUP that turns it back on restarts them.
func TestConfigWatchIsReloadable(t *testing.T) {
	old := watchEvery
	watchEvery = func(d time.Duration) time.Duration {
		if d > 0 {
			return time.Millisecond
		}
		return 0
	}
	ma := startMock(t, mock.Options{Name: "A"})
	mb := startMock(t, mock.Options{Name: "B"})
	cm := newConfigMapDir(t, watchConfig("1s", "a", ma.BaseURL(), mb.BaseURL()))
	sigs := make(chan os.Signal, 1)
	started := make(chan *Daemon, 1)
	exit := make(chan int, 1)
	go func() { exit <- run(cm.path(), "127.0.0.1:0", &syncBuffer{}, sigs, func(d *Daemon) { started <- d }) }()
	stopRun := sync.OnceValue(func() int { sigs <- syscall.SIGTERM; return <-exit })
	defer func() { stopRun(); watchEvery = old }()
	d := <-started
	waitFor(t, 5*time.Second, "checks", func() bool { return d.watchChecks.Load() >= 10 })

	cm.update(t, watchConfig("0s", "b", ma.BaseURL(), mb.BaseURL()))
	waitFor(t, 5*time.Second, "the watched reload turning the watch off", func() bool {
		return d.Gateway().Load().Config.Server.ConfigWatch == 0
	})
	n := d.watchChecks.Load()
	time.Sleep(200 * time.Millisecond) // 200 intervals
	if got := d.watchChecks.Load(); got != n {
		t.Fatalf("%d checks after config_watch: 0s took effect", got-n)
	}

	cm.update(t, watchConfig("1s", "a", ma.BaseURL(), mb.BaseURL()))
	sigs <- syscall.SIGHUP
	waitFor(t, 5*time.Second, "checks after SIGHUP turned the watch on", func() bool { return d.watchChecks.Load() >= n+10 })
	if code := stopRun(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestConfigWatchUnreadableFile: a file that cannot be read (here ..data
// points nowhere) is one failed reload however many checks see it, the
// configuration served stays, and the file coming back is picked up.
func TestConfigWatchUnreadableFile(t *testing.T) {
	old := watchEvery
	watchEvery = func(d time.Duration) time.Duration {
		if d > 0 {
			return time.Millisecond
		}
		return 0
	}
	ma := startMock(t, mock.Options{Name: "A"})
	mb := startMock(t, mock.Options{Name: "B"})
	cm := newConfigMapDir(t, watchConfig("1s", "a", ma.BaseURL(), mb.BaseURL()))
	sigs := make(chan os.Signal, 1)
	started := make(chan *Daemon, 1)
	exit := make(chan int, 1)
	logs := &syncBuffer{}
	go func() { exit <- run(cm.path(), "127.0.0.1:0", logs, sigs, func(d *Daemon) { started <- d }) }()
	stopRun := sync.OnceValue(func() int { sigs <- syscall.SIGTERM; return <-exit })
	defer func() { stopRun(); watchEvery = old }()
	d := <-started
	c := newClient()
	defer c.CloseIdleConnections()
	base := "http://" + d.Addr().String()
	failures := func() int { _, m := getWith(t, c, base+"/metrics"); return reloadCount(m, "failure") }

	data := filepath.Join(cm.dir, "..data")
	if err := os.Rename(data, data+".away"); err != nil {
		t.Fatal(err)
	}
	n := d.watchChecks.Load()
	waitFor(t, 5*time.Second, "100 checks of the missing file", func() bool { return d.watchChecks.Load() >= n+100 })
	if f := failures(); f != 1 {
		t.Fatalf("failed reloads after 100 checks of a missing file: %d, want 1", f)
	}
	if a, err := chat(c, base, "m", false); err != nil || a.target != "a" {
		t.Fatalf("while the file is missing: %v, target %q", err, a.target)
	}
	if err := os.Rename(data+".away", data); err != nil {
		t.Fatal(err)
	}
	cm.update(t, watchConfig("1s", "b", ma.BaseURL(), mb.BaseURL()))
	waitFor(t, 5*time.Second, "the file's return to be picked up", func() bool {
		a, err := chat(c, base, "m", false)
		return err == nil && a.target == "b"
	})
	if f := failures(); f != 1 {
		t.Errorf("failed reloads: %d, want 1", f)
	}
	if code := stopRun(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
