package daemon

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/mock"
)

// auditConfig: one eu target, one client key, the audit log at path
// rotating past 64 KiB with a checkpoint every 200 ms.
func auditConfig(upstreamURL, path, signingKey string) string {
	return fmt.Sprintf(`
server: {listen: "127.0.0.1:1", shutdown_timeout: 10s}
log: {access_log: false}
strategy:
  mode: conditional
  conditions:
    - {key: user, value: globex, target_key: eu}
targets:
  - {virtual_key: eu, provider: openai, base_url: %q, api_key: sk-upstream-secret, residency: eu}
auth:
  keys:
    - {name: globex-eu, key: sy-globex-client-key, user: globex, residency: [eu]}
audit:
  path: %q
  signing_key: %q
  checkpoint_every: 200ms
  max_file_bytes: 65536
`, upstreamURL, path, signingKey)
}

// load sends chat requests with the client key from 8 goroutines until
// stop is closed, counting the answers.
func load(t *testing.T, base string, stop <-chan struct{}) (*atomic.Int64, *sync.WaitGroup) {
	var n atomic.Int64
	var wg sync.WaitGroup
	c := newClient()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
					strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
				req.Header.Set("Authorization", "Bearer sy-globex-client-key")
				resp, err := c.Do(req)
				if err != nil {
					return // killed
				}
				resp.Body.Close()
				if resp.StatusCode == 200 {
					n.Add(1)
				}
			}
		}()
	}
	return &n, &wg
}

// auditFiles returns the audit set at path in chain order.
func auditFiles(t *testing.T, path string) []string {
	rotated, _ := filepath.Glob(strings.TrimSuffix(path, ".jsonl") + "-*.jsonl")
	sort.Strings(rotated)
	return append(rotated, path)
}

// verify runs bin audit verify and returns its exit code and output.
func verify(t *testing.T, bin, pub string, files ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"audit", "verify", "-pub", pub}, files...)...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

func keygen(t *testing.T, bin string) (priv, pub string) {
	t.Helper()
	out, err := exec.Command(bin, "audit", "keygen").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "AUDIT_SIGNING_KEY="); ok {
			priv = v
		}
		if v, ok := strings.CutPrefix(l, "AUDIT_PUBLIC_KEY="); ok {
			pub = v
		}
	}
	if priv == "" || pub == "" {
		t.Fatalf("keygen printed %q", out)
	}
	return priv, pub
}

// copySet copies files into a fresh directory, applying edit to the bytes
// of file i.
func copySet(t *testing.T, files []string, i int, edit func([]byte) []byte) []string {
	dir := t.TempDir()
	var out []string
	for j, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if j == i {
			b = edit(b)
		}
		p := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func lineOps(fn func(ls [][]byte) [][]byte) func([]byte) []byte {
	return func(b []byte) []byte {
		ls := bytes.SplitAfter(b, []byte("\n"))
		return bytes.Join(fn(ls[:len(ls)-1]), nil)
	}
}

// TestAuditLogOfTheBinaryUnderLoad runs the built binary with an audit
// log under load, stops it with SIGTERM, and checks audit verify on the
// rotated set it wrote: an untouched set passes with every answered
// request logged; each tampering is caught and named.
func TestAuditLogOfTheBinaryUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	priv, pub := keygen(t, bin)
	up := startMock(t, mock.Options{Name: "eu"})
	logPath := filepath.Join(dir, "log", "audit.jsonl")
	cfg := filepath.Join(dir, "switchyard.yaml")
	writeFile(t, cfg, auditConfig(up.BaseURL(), logPath, priv))
	p := startProc(t, bin, cfg)
	base := "http://" + p.addr

	// A request without a key is not authenticated: no line.
	if resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"x"}`)); err != nil || resp.StatusCode != 401 {
		t.Fatalf("no key: %v %v", resp, err)
	}
	stop := make(chan struct{})
	n, wg := load(t, base, stop)
	waitFor(t, 60*time.Second, "2,000 answers", func() bool { return n.Load() >= 2000 })
	close(stop)
	wg.Wait()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-p.done; err != nil {
		t.Fatalf("exit: %v\n%s", err, p.logs)
	}

	files := auditFiles(t, logPath)
	if len(files) < 3 {
		t.Fatalf("files %v; want a rotated set", files)
	}
	code, out := verify(t, bin, pub, files...)
	want := fmt.Sprintf("(%d requests,", n.Load())
	if code != 0 || !strings.Contains(out, want) || strings.Contains(out, "unsigned") {
		t.Fatalf("untouched set: exit %d %s; want ok with %s and nothing unsigned", code, out, want)
	}
	all := ""
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all += string(b)
	}
	for _, secret := range []string{"sy-globex-client-key", "sk-upstream-secret", `"content"`} {
		if strings.Contains(all, secret) {
			t.Errorf("the audit log holds %q", secret)
		}
	}

	_, otherPub, _ := audit.GenerateKey()
	cases := []struct {
		name  string
		files []string
		pub   string
		want  string
	}{
		{"edited byte", copySet(t, files, 1, func(b []byte) []byte {
			i := bytes.Index(b, []byte(`"status":200`)) + len(`"status":20`)
			b[i] = '1'
			return b
		}), pub, "prev is not the SHA-256 of the line before it"},
		{"deleted line", copySet(t, files, 1, lineOps(func(ls [][]byte) [][]byte { return append(ls[:5:5], ls[6:]...) })), pub, ":6: prev is not"},
		{"inserted line", copySet(t, files, 1, lineOps(func(ls [][]byte) [][]byte { return append(append(ls[:5:5], ls[2]), ls[5:]...) })), pub, ":6: prev is not"},
		{"swapped lines", copySet(t, files, 1, lineOps(func(ls [][]byte) [][]byte { ls[5], ls[6] = ls[6], ls[5]; return ls })), pub, ":6: prev is not"},
		{"wrong public key", files, otherPub, "checkpoint signature does not verify with this public key"},
		{"rotated file removed", append(files[:1:1], files[2:]...), pub, "this file does not continue"},
	}
	for _, c := range cases {
		code, out := verify(t, bin, c.pub, c.files...)
		if code != 1 || !strings.Contains(out, "BROKEN: ") || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d %q; want exit 1 naming %q", c.name, code, out, c.want)
		}
	}
}

// TestAuditLogSurvivesKill9 kills the binary with SIGKILL under load: the
// set verifies (at most an unsigned tail, never a broken chain); a restart
// continues the chain, and after a clean stop nothing is unsigned.
func TestAuditLogSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	priv, pub := keygen(t, bin)
	up := startMock(t, mock.Options{Name: "eu"})
	logPath := filepath.Join(dir, "audit.jsonl")
	cfg := filepath.Join(dir, "switchyard.yaml")
	writeFile(t, cfg, auditConfig(up.BaseURL(), logPath, priv))
	for round := range 3 {
		p := startProc(t, bin, cfg)
		stop := make(chan struct{})
		n, wg := load(t, "http://"+p.addr, stop)
		waitFor(t, 60*time.Second, "answers", func() bool { return n.Load() >= 1500 })
		_ = p.cmd.Process.Kill() // SIGKILL, mid-load
		<-p.done
		close(stop)
		wg.Wait()
		code, out := verify(t, bin, pub, auditFiles(t, logPath)...)
		if code != 0 {
			t.Fatalf("round %d: after kill -9: exit %d %s", round, code, out)
		}
		t.Logf("round %d after kill -9: %s", round, strings.TrimSpace(out))
	}
	p := startProc(t, bin, cfg)
	stop := make(chan struct{})
	n, wg := load(t, "http://"+p.addr, stop)
	waitFor(t, 60*time.Second, "answers", func() bool { return n.Load() >= 200 })
	close(stop)
	wg.Wait()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	code, out := verify(t, bin, pub, auditFiles(t, logPath)...)
	if code != 0 || strings.Contains(out, "unsigned") || strings.Contains(out, "incomplete") {
		t.Fatalf("after a clean stop: exit %d %s", code, out)
	}
}
