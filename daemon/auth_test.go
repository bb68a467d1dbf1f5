package daemon

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/mock"
)

// TestOpenGatewayWarning: without auth, New warns once when the listen
// address is not loopback; on loopback, or with client keys, it does not.
func TestOpenGatewayWarning(t *testing.T) {
	const base = `strategy:
  mode: conditional
  conditions: [{key: model, value: m, target_key: a}]
targets: [{virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1"}]
`
	const auth = "auth: {keys: [{name: k, key: sy-k}]}\n"
	for _, c := range []struct {
		listen, cfg string
		warn        bool
	}{
		{"0.0.0.0:0", base, true},
		{":0", base, true},
		{"[::]:0", base, true},
		{"10.1.2.3:8080", base, true},
		{"127.0.0.1:0", base, false},
		{"[::1]:0", base, false},
		{"localhost:0", base, false},
		{"0.0.0.0:0", base + auth, false},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		writeFile(t, path, c.cfg)
		logs := &syncBuffer{}
		if _, err := New(path, c.listen, logs); err != nil {
			t.Fatalf("%s: %v\n%s", c.listen, err, logs)
		}
		n := strings.Count(logs.String(), "no auth block: the gateway is open")
		if want := map[bool]int{true: 1, false: 0}[c.warn]; n != want {
			t.Errorf("%s (auth %v): %d warnings; want %d\n%s", c.listen, strings.Contains(c.cfg, "auth"), n, want, logs)
		}
	}
}

// TestOpenGatewayWarningOnReload: a reload that removes the auth block of
// a gateway listening beyond loopback warns; one that keeps it does not.
func TestOpenGatewayWarningOnReload(t *testing.T) {
	const base = `strategy:
  mode: conditional
  conditions: [{key: model, value: m, target_key: a}]
targets: [{virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1"}]
`
	path := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, path, base+"auth: {keys: [{name: k, key: sy-k}]}\n")
	logs := &syncBuffer{}
	d, err := New(path, "0.0.0.0:0", logs)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, base+"auth: {keys: [{name: k2, key: sy-k2}]}\n")
	if got := d.Reload(); got != ReloadSuccess {
		t.Fatal(got)
	}
	writeFile(t, path, base)
	if got := d.Reload(); got != ReloadSuccess {
		t.Fatal(got)
	}
	if n := strings.Count(logs.String(), "no auth block: the gateway is open"); n != 1 {
		t.Errorf("%d warnings; want 1 (the reload that dropped the keys)\n%s", n, logs)
	}
}

// TestSIGHUPRevokesKey runs the daemon's signal loop: after a SIGHUP that
// removes a client key, the key is refused (401, no upstream call) while
// the key that stayed keeps working; SIGTERM then drains and returns 0.
func TestSIGHUPRevokesKey(t *testing.T) {
	m := startMock(t, mock.Options{Name: "up"})
	cfg := func(keys string) string {
		return `strategy:
  mode: conditional
  conditions: [{key: model, value: m, target_key: a}]
targets: [{virtual_key: a, provider: openai, base_url: "` + m.BaseURL() + `"}]
auth:
  keys:
` + keys
	}
	const stay, gone = "    - {name: stay, key: sy-stay}\n", "    - {name: gone, key: sy-gone}\n"
	path := cfgPath(t)
	writeFile(t, path, cfg(stay+gone))
	sigs := make(chan os.Signal, 4)
	logs := &syncBuffer{}
	started := make(chan *Daemon, 1)
	exit := make(chan int, 1)
	go func() { exit <- run(path, "127.0.0.1:0", logs, sigs, func(d *Daemon) { started <- d }) }()
	var d *Daemon
	select {
	case d = <-started:
	case code := <-exit:
		t.Fatalf("run exited %d:\n%s", code, logs)
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not start")
	}
	c := newClient()
	status := func(key string) int {
		req, _ := http.NewRequest("POST", "http://"+d.Addr().String()+"/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b := status("sy-stay"), status("sy-gone"); a != 200 || b != 200 {
		t.Fatalf("before the reload: %d %d", a, b)
	}
	writeFile(t, path, cfg(stay))
	sigs <- syscall.SIGHUP
	waitFor(t, 5*time.Second, "the SIGHUP to revoke gone", func() bool { return status("sy-gone") == 401 })
	before := m.Stats().Requests
	if got := status("sy-gone"); got != 401 {
		t.Errorf("revoked key: %d", got)
	}
	if got := status("sy-stay"); got != 200 {
		t.Errorf("kept key: %d", got)
	}
	if n := m.Stats().Requests - before; n != 1 {
		t.Errorf("%d upstream calls for one refused and one served request; want 1", n)
	}
	sigs <- syscall.SIGTERM
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}
