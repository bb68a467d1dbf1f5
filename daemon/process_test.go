package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is the built binary running `serve` in a test.
type proc struct {
	cmd  *exec.Cmd
	addr string
	logs *syncBuffer
	done chan error // cmd.Wait's result, once the process exited
}

// startProc runs bin serve -config path -listen 127.0.0.1:0 and waits for
// its "serving" line. The process is killed at the end of the test if it
// still runs.
func startProc(t *testing.T, bin, path string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, "serve", "-config", path, "-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "SWITCHYARD_CONFIG=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: &syncBuffer{}, done: make(chan error, 1)}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(p.logs, line)
			var rec struct{ Message, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Message == "serving" {
				addrc <- rec.Addr
			}
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case p.addr = <-addrc:
	case <-time.After(20 * time.Second):
		t.Fatalf("no serving line:\n%s", p.logs)
	}
	return p
}

// waitLog waits until a log line's message starts with prefix and returns
// when it was seen.
func (p *proc) waitLog(t *testing.T, d time.Duration, prefix string) time.Time {
	t.Helper()
	waitFor(t, d, "a log line "+strconv.Quote(prefix), func() bool {
		return strings.Contains(p.logs.String(), `"message":"`+prefix)
	})
	return time.Now()
}

// stop sends SIGTERM and wants exit code 0 within d.
func (p *proc) stop(t *testing.T, d time.Duration) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.wantExit0(t, d)
}

// wantExit0 waits up to d for the process to exit with code 0.
func (p *proc) wantExit0(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("process exit: %v\n%s", err, p.logs)
		}
	case <-time.After(d):
		t.Fatalf("process did not exit within %v:\n%s", d, p.logs)
	}
}

// configMapDir lays a config file out as a Kubernetes ConfigMap volume
// does: dir/config.yaml -> ..data/config.yaml, ..data -> a timestamped
// directory holding the real file. Kubelet updates it by writing a new
// timestamped directory and renaming a fresh symlink over ..data.
type configMapDir struct {
	dir string
	n   int
	cur string // the timestamped directory ..data points to
}

func newConfigMapDir(t *testing.T, body string) *configMapDir {
	t.Helper()
	c := &configMapDir{dir: t.TempDir()}
	c.update(t, body)
	if err := os.Symlink(filepath.Join("..data", "config.yaml"), c.path()); err != nil {
		t.Fatal(err)
	}
	return c
}

// path is the file the daemon is given: the stable symlink.
func (c *configMapDir) path() string { return filepath.Join(c.dir, "config.yaml") }

// update swaps in body as kubelet's AtomicWriter does: new directory, new
// symlink, rename over ..data, old directory removed.
func (c *configMapDir) update(t *testing.T, body string) {
	t.Helper()
	c.n++
	ts := fmt.Sprintf("..2026_12_01_20_00_%02d.%09d", c.n%60, c.n)
	if err := os.Mkdir(filepath.Join(c.dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, ts, "config.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(c.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if c.cur != "" {
		if err := os.RemoveAll(filepath.Join(c.dir, c.cur)); err != nil {
			t.Fatal(err)
		}
	}
	c.cur = ts
}

// reloadCount reads switchyard_config_reloads_total{result=...} from a
// /metrics body (-1 when absent).
func reloadCount(metrics, result string) int {
	re := regexp.MustCompile(`(?m)^switchyard_config_reloads_total\{result="` + regexp.QuoteMeta(result) + `"\} (\d+)$`)
	m := re.FindStringSubmatch(metrics)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
