package daemon

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/mock"
	"github.com/switchyard/switchyard/upstream"
)

const streamEvents = 5

// Two valid configurations that route model "m" to different upstreams,
// and one that is invalid.
//
// cfgA: m -> a; m2 -> c (target c exists only in cfgA).
// cfgB: m -> b; m2 -> no rule -> targets[0] = b. Target a's max_concurrency
// differs, so the swap also replaces a's HostClient, and c's pool entry is
// dropped while requests may still be running on it.
func cfgA(a, b, c string) string {
	return fmt.Sprintf(`
server: {listen: "127.0.0.1:1", shutdown_timeout: 5s}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: a}
    - {key: model, value: m2, target_key: c}
targets:
  - {virtual_key: a, provider: openai, base_url: %q, api_key: key-a}
  - {virtual_key: b, provider: openai, base_url: %q, api_key: key-b}
  - {virtual_key: c, provider: openai, base_url: %q, api_key: key-c}
`, a, b, c)
}

func cfgB(a, b string) string {
	return fmt.Sprintf(`
server: {listen: "127.0.0.1:1", shutdown_timeout: 5s}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: b}
targets:
  - {virtual_key: b, provider: openai, base_url: %q, api_key: key-b}
  - {virtual_key: a, provider: openai, base_url: %q, api_key: key-a, concurrency: {max_concurrency: 128}}
`, b, a)
}

// cfgBad has two problems: a rule naming an undeclared target and an
// unknown key. It carries a credential that must not reach the log.
const cfgBad = `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: nowhere}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: sk-do-not-log-me, colour: red}
`

// loadLoop runs workers goroutines sending chat requests (every third one
// a stream) for models m and m2 until stop is closed, and returns a
// function that waits for them and reports every failed request.
func loadLoop(t *testing.T, base string, workers int, stop <-chan struct{}) (wait func() (ok int64, failures []string)) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
		ok       atomic.Int64
	)
	c := newClient()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				model := "m"
				if (i+w)%4 == 3 {
					model = "m2"
				}
				stream := i%3 == 0
				a, err := chat(c, base, model, stream)
				if err == nil && a.status != http.StatusOK {
					err = fmt.Errorf("status %d from %q: %s", a.status, a.target, a.body)
				}
				if err == nil && stream {
					err = checkStream(a.body, streamEvents)
				}
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s stream=%v: %v", model, stream, err))
					mu.Unlock()
					continue
				}
				ok.Add(1)
			}
		}()
	}
	return func() (int64, []string) {
		wg.Wait()
		return ok.Load(), failures
	}
}

func threeMocks(t *testing.T) (a, b, c *mock.Server) {
	o := mock.Options{StreamEvents: streamEvents, StreamInterval: time.Millisecond}
	o.Name = "A"
	a = startMock(t, o)
	o.Name = "B"
	b = startMock(t, o)
	o.Name = "C"
	c = startMock(t, o)
	return a, b, c
}

// TestReloadUnderLoad swaps between two valid configurations and an
// invalid one many times while several goroutines send requests and
// streams: no request may fail, each valid configuration must route model
// m to its own upstream as soon as Reload returns, and an invalid one must
// leave the previous routing in place.
func TestReloadUnderLoad(t *testing.T) {
	ma, mb, mc := threeMocks(t)
	path := cfgPath(t)
	writeFile(t, path, cfgA(ma.BaseURL(), mb.BaseURL(), mc.BaseURL()))
	logs := &syncBuffer{}
	d, base := startDaemon(t, path, logs)

	stop := make(chan struct{})
	wait := loadLoop(t, base, 6, stop)
	probe := newClient()
	routesTo := func(want string) {
		t.Helper()
		a, err := chat(probe, base, "m", false)
		if err != nil || a.status != http.StatusOK || a.target != want {
			t.Fatalf("after reload: model m answered by %q (status %d, err %v), want %q", a.target, a.status, err, want)
		}
	}

	results := map[string]int{}
	deadline := time.Now().Add(3 * time.Second)
	want := "a"
	for i := 0; time.Now().Before(deadline); i++ {
		var body, wantResult string
		switch i % 4 {
		case 0:
			body, wantResult, want = cfgB(ma.BaseURL(), mb.BaseURL()), ReloadSuccess, "b"
		case 1, 3:
			body, wantResult = cfgBad, ReloadFailure
		case 2:
			body, wantResult, want = cfgA(ma.BaseURL(), mb.BaseURL(), mc.BaseURL()), ReloadSuccess, "a"
		}
		writeFile(t, path, body)
		if got := d.Reload(); got != wantResult {
			t.Fatalf("reload %d: %s, want %s", i, got, wantResult)
		}
		results[wantResult]++
		routesTo(want)
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	ok, failures := wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed during reloads, first: %s", len(failures), int64(len(failures))+ok, failures[0])
	}
	if results[ReloadSuccess] < 4 || results[ReloadFailure] < 4 || ok < 100 {
		t.Fatalf("too little exercised: %v reloads, %d requests", results, ok)
	}
	// Every upstream answered some of the load (m2 went to c under cfgA).
	for _, m := range []*mock.Server{ma, mb, mc} {
		if m.Stats().Requests == 0 {
			t.Errorf("mock %s got no request", m.Name())
		}
	}
	// The invalid config's problems were logged one a line, its credential never.
	out := logs.String()
	if strings.Contains(out, "sk-do-not-log-me") {
		t.Fatal("a credential from the rejected config reached the log")
	}
	for _, p := range []string{`"path":"strategy.conditions[0].target_key"`, `"path":"targets[0].colour"`} {
		if n := strings.Count(out, p); n != results[ReloadFailure] {
			t.Errorf("problem %s logged %d times, want once per failed reload (%d)", p, n, results[ReloadFailure])
		}
	}
	// The pool holds exactly the identities of the config served last: a,
	// b and c under cfgA; a and b under cfgB (c dropped by Retain).
	wantIDs := map[string]int{"a": 3, "b": 2}[want]
	if n := d.Pool().Len(); n != wantIDs {
		t.Errorf("pool holds %d identities under cfg%s, want %d", n, strings.ToUpper(want), wantIDs)
	}
	t.Logf("%d requests, reloads %v", ok, results)
}

// TestSIGHUPReloads runs the daemon with its signal loop (run) and real
// signals delivered to the test process: SIGHUPs under load switch the
// routing, an invalid file keeps it, and SIGTERM drains and returns 0.
func TestSIGHUPReloads(t *testing.T) {
	ma, mb, mc := threeMocks(t)
	path := cfgPath(t)
	writeFile(t, path, cfgA(ma.BaseURL(), mb.BaseURL(), mc.BaseURL()))

	// As Run does: register before anything loads.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	logs := &syncBuffer{}
	started := make(chan *Daemon, 1)
	exit := make(chan int, 1)
	go func() { exit <- run(path, "127.0.0.1:0", logs, sigs, func(d *Daemon) { started <- d }) }()
	var d *Daemon
	select {
	case d = <-started:
	case code := <-exit:
		t.Fatalf("run exited %d before serving:\n%s", code, logs)
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not start")
	}
	base := "http://" + d.Addr().String()

	stop := make(chan struct{})
	wait := loadLoop(t, base, 4, stop)
	probe := newClient()
	target := func() string {
		a, err := chat(probe, base, "m", false)
		if err != nil || a.status != http.StatusOK {
			t.Fatalf("probe: status %d, err %v, body %s", a.status, err, a.body)
		}
		return a.target
	}
	hup := func() {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	reloads := func() int { return strings.Count(logs.String(), "reloading the configuration") }

	for round := range 3 {
		writeFile(t, path, cfgB(ma.BaseURL(), mb.BaseURL()))
		hup()
		waitFor(t, 3*time.Second, "SIGHUP to route m to b", func() bool { return target() == "b" })

		n := reloads()
		writeFile(t, path, cfgBad)
		hup()
		waitFor(t, 3*time.Second, "the invalid reload to be handled", func() bool { return reloads() > n })
		if got := target(); got != "b" {
			t.Fatalf("round %d: after an invalid reload m goes to %q, want b (previous config kept)", round, got)
		}

		writeFile(t, path, cfgA(ma.BaseURL(), mb.BaseURL(), mc.BaseURL()))
		hup()
		waitFor(t, 3*time.Second, "SIGHUP to route m to a", func() bool { return target() == "a" })
	}
	close(stop)
	ok, failures := wait()
	if len(failures) > 0 {
		t.Fatalf("%d requests failed during SIGHUP reloads, first: %s", len(failures), failures[0])
	}
	if ok == 0 {
		t.Fatal("no request completed")
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit code after SIGTERM %d, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not stop the daemon")
	}
	if !strings.Contains(logs.String(), "drained; exiting") {
		t.Errorf("no drain log line:\n%s", logs)
	}
}

// TestOpenCircuitSurvivesReload opens target a's circuit, reloads a
// configuration that changes other things, and checks the next request
// skips a without calling it. A reload that changes a's credential gives
// a fresh identity, and then a is called again: the control that shows the
// first half would notice lost state.
func TestOpenCircuitSurvivesReload(t *testing.T) {
	ma := startMock(t, mock.Options{Name: "A"})
	mb := startMock(t, mock.Options{Name: "B"})
	conf := func(keyA, extraRule string) string {
		return fmt.Sprintf(`
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_keys: [a, b]}%s
targets:
  - {virtual_key: a, provider: openai, base_url: %q, api_key: %s,
     circuit_breaker: {failure_threshold: 1, timeout: 10m}}
  - {virtual_key: b, provider: openai, base_url: %q, api_key: key-b}
`, extraRule, ma.BaseURL(), keyA, mb.BaseURL())
	}
	path := cfgPath(t)
	writeFile(t, path, conf("key-a", ""))
	d, base := startDaemon(t, path, &syncBuffer{})
	c := newClient()

	ask := func() (target, attempts string) {
		t.Helper()
		resp, err := c.Post(base+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"m","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return resp.Header.Get("X-Gateway-Target"), resp.Header.Get("X-Gateway-Attempts")
	}

	// One 503 from a opens its circuit (threshold 1); b answers.
	ma.Fail(mock.Failure{Status: 503, Count: 1})
	if tg, n := ask(); tg != "b" || n != "2" {
		t.Fatalf("failing a: answered by %s after %s attempts, want b after 2", tg, n)
	}
	if st := d.Gateway().Load().Targets[0]; st.Name != "a" {
		t.Fatalf("targets[0] is %s", st.Name)
	}
	before := ma.Stats().Requests

	// Reload: a new rule and a new target order elsewhere, a untouched.
	writeFile(t, path, conf("key-a", "\n    - {key: user, value: vip, target_key: b}"))
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("reload: %s", r)
	}
	if tg, n := ask(); tg != "b" || n != "1" {
		t.Fatalf("after reload: answered by %s after %s attempts, want b after 1 (a skipped)", tg, n)
	}
	if got := ma.Stats().Requests; got != before {
		t.Fatalf("a was called %d more times after the reload although its circuit is open", got-before)
	}
	if st := d.Gateway().Load().Targets[0].Breaker().State(time.Now()); st != upstream.BreakerOpen {
		t.Fatalf("a's breaker is %v after the reload, want open", st)
	}

	// Control: a new credential is a new identity with a closed circuit.
	writeFile(t, path, conf("key-a2", ""))
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("reload: %s", r)
	}
	if tg, n := ask(); tg != "a" || n != "1" {
		t.Fatalf("after a credential change: answered by %s after %s attempts, want a after 1", tg, n)
	}
	if d.Pool().Len() != 2 {
		t.Fatalf("pool holds %d identities, want 2 (the old a dropped)", d.Pool().Len())
	}
}
