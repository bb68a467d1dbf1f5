package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/mock"
	"github.com/switchyard/switchyard/upstream"
)

func oneTarget(listen, base, extra string) string {
	return fmt.Sprintf(`
server: {listen: %q}
%s
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: a}
targets:
  - {virtual_key: a, provider: openai, base_url: %q, api_key: sk-secret-a, models: [m]}
`, listen, extra, base)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	return getWith(t, newClient(), url)
}

// TestReloadResultsAndMetrics checks each reload result, what /metrics
// says about it, and that the served hash follows successful reloads only.
func TestReloadResultsAndMetrics(t *testing.T) {
	m := startMock(t, mock.Options{})
	path := cfgPath(t)
	first := oneTarget("127.0.0.1:1", m.BaseURL(), "")
	writeFile(t, path, first)
	d, base := startDaemon(t, path, &syncBuffer{})

	if r := d.Reload(); r != ReloadUnchanged {
		t.Fatalf("reload of the same bytes: %s, want %s", r, ReloadUnchanged)
	}
	writeFile(t, path, "targets: [") // syntax error
	if r := d.Reload(); r != ReloadFailure {
		t.Fatalf("reload of a broken file: %s, want %s", r, ReloadFailure)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if r := d.Reload(); r != ReloadFailure {
		t.Fatalf("reload of a missing file: %s, want %s", r, ReloadFailure)
	}
	second := oneTarget("127.0.0.1:1", m.BaseURL(), "log: {access_log: true}")
	writeFile(t, path, second)
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("reload of a new valid file: %s, want %s", r, ReloadSuccess)
	}
	if got, want := d.Gateway().Load().Config.Hash, hashOf([]byte(second)); got != want {
		t.Fatalf("serving hash %s, want %s", got, want)
	}
	// Back to the first bytes: that is a change from what is served now.
	writeFile(t, path, first)
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("reload back to the first file: %s, want %s", r, ReloadSuccess)
	}

	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`switchyard_config_reloads_total{result="success"} 2`,
		`switchyard_config_reloads_total{result="failure"} 2`,
		`switchyard_config_reloads_total{result="unchanged"} 1`,
		`switchyard_config_info{hash="` + hashOf([]byte(first))[:12] + `"} 1`,
		"switchyard_config_last_reload_success 1",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestReloadWarnsOnRestartOnlySettings: a reload that changes server.listen
// or the log block logs a warning naming the setting, keeps the bound
// address, and still applies the rest.
func TestReloadWarnsOnRestartOnlySettings(t *testing.T) {
	m := startMock(t, mock.Options{})
	path := cfgPath(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	writeFile(t, path, oneTarget(addr, m.BaseURL(), ""))
	logs := &syncBuffer{}
	d, err := New(path, "", logs) // no -listen: server.listen is used
	if err != nil {
		t.Fatal(err)
	}
	if d.ListenAddress() != addr {
		t.Fatalf("listen address %s, want %s", d.ListenAddress(), addr)
	}
	writeFile(t, path, oneTarget("127.0.0.1:9", m.BaseURL(),
		"log: {level: debug, format: console}\nserver_x: 1")) // invalid first: no warning
	if d.Reload() != ReloadFailure {
		t.Fatal("invalid reload accepted")
	}
	if strings.Contains(logs.String(), "takes effect only after a restart") {
		t.Fatal("a rejected reload warned about restart-only settings")
	}
	writeFile(t, path, strings.Replace(oneTarget("127.0.0.1:9", m.BaseURL(),
		"log: {level: debug, format: console}"), "server: {", "server: {max_request_bytes: 1000, ", 1))
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("reload: %s", r)
	}
	out := logs.String()
	for _, s := range []string{`"setting":"server.listen"`, `"setting":"log.level"`, `"setting":"log.format"`} {
		if !strings.Contains(out, s) {
			t.Errorf("no restart warning with %s in:\n%s", s, out)
		}
	}
	if strings.Contains(out, `"setting":"log.access_log"`) {
		t.Error("warned about log.access_log, which did not change")
	}
	if d.ListenAddress() != addr {
		t.Fatalf("listen address moved to %s on reload", d.ListenAddress())
	}
	if got := d.Gateway().Load().Config.Server.MaxRequestBytes; got != 1000 {
		t.Fatalf("max_request_bytes %d after reload, want 1000 (applied at once)", got)
	}
	if strings.Contains(out, "sk-secret-a") {
		t.Fatal("a credential reached the log")
	}

	// The comparison is with what runs (the start's values), not with the
	// previous reload's file: a second reload that still says debug warns
	// again with "running":"info", and one back to the start's values (and
	// listen) is silent. Comparing with the previous file got both wrong.
	warnings := func() int { return strings.Count(logs.String(), "takes effect only after a restart") }
	before := warnings()
	writeFile(t, path, oneTarget("127.0.0.1:9", m.BaseURL(), "log: {level: debug, format: console}\n# again"))
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("second reload: %s", r)
	}
	if got := warnings() - before; got != 3 {
		t.Errorf("second reload with the same restart-only changes: %d warnings, want 3\n%s", got, logs.String())
	}
	if !strings.Contains(logs.String(), `"setting":"log.level","running":"info","in_file":"debug"`) {
		t.Errorf("no log.level warning naming the running level info:\n%s", logs.String())
	}
	before = warnings()
	writeFile(t, path, oneTarget(addr, m.BaseURL(), "# back to the start's settings"))
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("third reload: %s", r)
	}
	if got := warnings() - before; got != 0 {
		t.Errorf("reload back to the running settings: %d restart warnings, want 0\n%s", got, logs.String())
	}
}

// TestReduceMemoryUsageIsRestartOnly: server.reduce_memory_usage is off
// unless set, the server takes the start's value, and a reload that changes
// it warns and leaves the server as it was; a reload back is silent.
func TestReduceMemoryUsageIsRestartOnly(t *testing.T) {
	m := startMock(t, mock.Options{})
	path := cfgPath(t)
	writeFile(t, path, oneTarget("127.0.0.1:1", m.BaseURL(), ""))
	d, err := New(path, "", &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	if d.srv.ReduceMemoryUsage {
		t.Fatal("ReduceMemoryUsage on without server.reduce_memory_usage; want the default off")
	}

	withReduce := func(on bool, extra string) string {
		return strings.Replace(oneTarget("127.0.0.1:1", m.BaseURL(), extra), "server: {",
			fmt.Sprintf("server: {reduce_memory_usage: %v, ", on), 1)
	}
	writeFile(t, path, withReduce(true, ""))
	logs := &syncBuffer{}
	d, err = New(path, "", logs)
	if err != nil {
		t.Fatal(err)
	}
	if !d.srv.ReduceMemoryUsage {
		t.Fatal("ReduceMemoryUsage off with server.reduce_memory_usage: true")
	}
	writeFile(t, path, withReduce(false, "log: {access_log: true}"))
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("reload: %s", r)
	}
	want := `"setting":"server.reduce_memory_usage","running":"true","in_file":"false"`
	if !strings.Contains(logs.String(), want) {
		t.Errorf("no restart warning with %s in:\n%s", want, logs.String())
	}
	if got := strings.Count(logs.String(), "takes effect only after a restart"); got != 1 {
		t.Errorf("%d restart warnings; want 1 (only reduce_memory_usage changed)\n%s", got, logs.String())
	}
	if !d.srv.ReduceMemoryUsage || d.Gateway().Load().Config.Server.ReduceMemoryUsage {
		t.Fatalf("after reload: server %v, served config %v; want true (kept), false (in the file)",
			d.srv.ReduceMemoryUsage, d.Gateway().Load().Config.Server.ReduceMemoryUsage)
	}
	writeFile(t, path, withReduce(true, "# back"))
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("reload back: %s", r)
	}
	if got := strings.Count(logs.String(), "takes effect only after a restart"); got != 1 {
		t.Errorf("reload back to the running value warned: %d warnings in all, want 1\n%s", got, logs.String())
	}
}

// TestStartupFailures: an invalid config logs each problem on its own line
// and run returns 1 without serving; so does an address already in use.
func TestStartupFailures(t *testing.T) {
	path := cfgPath(t)
	writeFile(t, path, cfgBad)
	logs := &syncBuffer{}
	if _, err := New(path, "", logs); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("New with an invalid config: %v, want ErrInvalidConfig", err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "strategy.conditions[0].target_key") ||
		!strings.Contains(lines[1], "targets[0].colour") {
		t.Fatalf("want one log line per problem, got:\n%s", logs)
	}
	if strings.Contains(logs.String(), "sk-do-not-log-me") {
		t.Fatal("a credential reached the log")
	}

	started := func(*Daemon) { t.Error("run served an invalid config") }
	if code := run(path, "", io.Discard, nil, started); code != 1 {
		t.Fatalf("run with an invalid config: exit %d, want 1", code)
	}
	if code := run(path+".missing", "", io.Discard, nil, started); code != 1 {
		t.Fatalf("run with a missing config: exit %d, want 1", code)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	writeFile(t, path, oneTarget("127.0.0.1:1", "http://127.0.0.1:1/v1", ""))
	logs = &syncBuffer{}
	if code := run(path, busy.Addr().String(), logs, nil, started); code != 1 {
		t.Fatalf("run on a busy address: exit %d, want 1", code)
	}
	if !strings.Contains(logs.String(), "cannot listen") {
		t.Fatalf("no listen error logged:\n%s", logs)
	}
}

// TestAccessLogAndRequestMetrics: with log.access_log true every API request
// (a routed one, a stream and a 404 refused before any upstream) gets one
// access line and is counted in switchyard_requests_total; with false, no
// access line is written but requests are still counted.
func TestAccessLogAndRequestMetrics(t *testing.T) {
	m := startMock(t, mock.Options{StreamEvents: 3})
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("access_log=", on), func(t *testing.T) {
			path := cfgPath(t)
			writeFile(t, path, oneTarget("127.0.0.1:1", m.BaseURL(), fmt.Sprintf("log: {access_log: %v}", on)))
			logs := &syncBuffer{}
			_, base := startDaemon(t, path, logs)
			c := newClient()
			for _, tc := range []struct {
				model  string
				stream bool
				status int
			}{{"m", false, 200}, {"m", true, 200}, {"nope", false, 404}} {
				if a, err := chat(c, base, tc.model, tc.stream); err != nil || a.status != tc.status {
					t.Fatalf("%s: %d %v", tc.model, a.status, err)
				}
			}
			// A stream's line is written when the stream ends, after the
			// client read [DONE]; wait for it rather than race it.
			want := 0
			if on {
				want = 3
			}
			waitFor(t, 2*time.Second, "access lines", func() bool {
				return strings.Count(logs.String(), `"message":"request"`) == want
			})
			out := logs.String()
			if on {
				for _, s := range []string{`"rule":"0","chain":["a"],"target":"a","attempts":1,"status":200,"outcome":"ok","stream":true`,
					`"model":"nope","rule":"fallback"`} {
					if !strings.Contains(out, s) {
						t.Errorf("no access line with %s in:\n%s", s, out)
					}
				}
			}
			if strings.Contains(out, "sk-secret-a") {
				t.Fatal("a credential reached the log")
			}
			_, metrics := get(t, base+"/metrics")
			for _, s := range []string{`switchyard_requests_total{surface="chat",status="200"} 2`,
				`switchyard_requests_total{surface="chat",status="404"} 1`} {
				if !strings.Contains(metrics, s) {
					t.Errorf("/metrics lacks %s", s)
				}
			}
		})
	}
}

// TestReloadBuildFailureAndPanic: when building the new State fails or
// panics (never for a validated config; a gateway bug), the reload is a
// failure, the previous configuration keeps serving, the Pool entries the
// failed build created are dropped, and the next reload works.
func TestReloadBuildFailureAndPanic(t *testing.T) {
	ma := startMock(t, mock.Options{Name: "A"})
	mb := startMock(t, mock.Options{Name: "B"})
	path := cfgPath(t)
	writeFile(t, path, oneTarget("127.0.0.1:1", ma.BaseURL(), ""))
	logs := &syncBuffer{}
	d, base := startDaemon(t, path, logs)
	c := newClient()
	target := func() string {
		a, err := chat(c, base, "m", false)
		if err != nil || a.status != http.StatusOK {
			t.Fatalf("status %d err %v", a.status, err)
		}
		return answeredByMock(t, a.body)
	}

	real := buildState
	defer func() { buildState = real }()
	for name, bad := range map[string]func(*config.Config, *upstream.Pool, time.Time) (*hotpath.State, error){
		"error": func(cfg *config.Config, p *upstream.Pool, now time.Time) (*hotpath.State, error) {
			_, _ = real(cfg, p, now) // adds B's identity to the pool
			return nil, errors.New("injected build failure")
		},
		"panic": func(cfg *config.Config, p *upstream.Pool, now time.Time) (*hotpath.State, error) {
			_, _ = real(cfg, p, now)
			panic("injected build panic")
		},
	} {
		buildState = bad
		writeFile(t, path, oneTarget("127.0.0.1:1", mb.BaseURL(), "# "+name))
		if r := d.Reload(); r != ReloadFailure {
			t.Fatalf("%s: reload %s, want failure", name, r)
		}
		if got := target(); got != "A" {
			t.Fatalf("%s: answered by %s after a failed reload, want A", name, got)
		}
		if n := d.Pool().Len(); n != 1 {
			t.Fatalf("%s: pool holds %d identities after a failed build, want 1", name, n)
		}
	}
	if !strings.Contains(logs.String(), "BUG: config reload panicked") {
		t.Fatalf("the panic was not logged:\n%s", logs)
	}
	buildState = real
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("reload after the failures: %s", r)
	}
	if got := target(); got != "B" {
		t.Fatalf("answered by %s, want B", got)
	}
}

// answeredByMock returns the mock name in a chat completion's
// system_fingerprint.
func answeredByMock(t *testing.T, body string) string {
	t.Helper()
	var v struct {
		SystemFingerprint string `json:"system_fingerprint"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("not a chat completion: %s", body)
	}
	return v.SystemFingerprint
}
