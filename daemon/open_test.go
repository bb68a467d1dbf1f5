package daemon

import (
	"path/filepath"
	"strings"
	"testing"
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
