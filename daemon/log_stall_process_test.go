package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchyard/switchyard/mock"
)

// TestStalledStderrDoesNotStopRequests runs the built binary with the
// access log on and its stderr a pipe the test stops reading once the
// gateway serves: far more access lines than the pipe holds are logged,
// every request is still answered, and after SIGTERM every answered
// request's access line arrives (but for the lines /metrics says were
// dropped), followed by the drain's last line.
func TestStalledStderrDoesNotStopRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	up := startMock(t, mock.Options{Name: "up"})
	path := filepath.Join(dir, "switchyard.yaml")
	writeFile(t, path, fmt.Sprintf(`
log: {access_log: true}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: up}
targets:
  - {virtual_key: up, provider: openai, base_url: %q, api_key: k1}
`, up.BaseURL()))

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	pipeSize, err := unix.FcntlInt(pr.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "-config", path, "-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "SWITCHYARD_CONFIG=")
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close() // the child holds the write end
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()

	// Read up to the "serving" line, then stop reading.
	logs := bufio.NewReaderSize(pr, 1<<20)
	var addr string
	for addr == "" {
		line, err := logs.ReadBytes('\n')
		if err != nil {
			t.Fatalf("no serving line: %v", err)
		}
		var rec struct{ Message, Addr string }
		if json.Unmarshal(line, &rec) == nil && rec.Message == "serving" {
			addr = rec.Addr
		}
	}
	base := "http://" + addr

	// Enough requests that their access lines fill the pipe several times
	// over; each must be answered (the client gives up after 10 s).
	const workers, each = 8, 150
	c := newClient()
	var mu sync.Mutex
	answered := map[string]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("stall-%d-%d", w, i)
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
					strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Request-Id", id)
				resp, err := c.Do(req)
				if err != nil {
					t.Errorf("request %s with stderr stalled: %v", id, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("request %s: status %d", id, resp.StatusCode)
					return
				}
				mu.Lock()
				answered[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	_, metrics := getWith(t, c, base+"/metrics")
	m := regexp.MustCompile(`(?m)^switchyard_log_lines_dropped_total (\d+)$`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("no switchyard_log_lines_dropped_total in /metrics")
	}
	dropped, _ := strconv.Atoi(m[1])

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The drain runs with stderr still unread. Once the listener is closed
	// the drain is nearly over: a gateway that exits without writing its
	// buffered lines exits now and loses them (found below); one that
	// writes them first waits for the reader, up to its close timeout.
	waitFor(t, 20*time.Second, "the listener to close", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err != nil
	})
	var exitErr error
	gone := false
	select {
	case exitErr = <-exited:
		gone = true
	case <-time.After(time.Second):
	}
	rest, err := io.ReadAll(logs) // the consumer reads again, to the end
	if err != nil {
		t.Fatal(err)
	}
	if !gone {
		exitErr = <-exited
	}
	if exitErr != nil {
		t.Fatalf("exit: %v", exitErr)
	}

	seen := map[string]int{}
	var last string
	for _, line := range strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n") {
		var rec struct {
			Message string
			ID      string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a line is not whole JSON: %v: %.200q", err, line)
		}
		if rec.Message == "request" {
			seen[rec.ID]++
		}
		last = rec.Message
	}
	missing := 0
	for id := range answered {
		switch seen[id] {
		case 0:
			missing++
		case 1:
		default:
			t.Errorf("request %s logged %d times", id, seen[id])
		}
	}
	if missing != dropped {
		t.Fatalf("%d of %d answered requests have no access line; /metrics counted %d dropped", missing, len(answered), dropped)
	}
	if last != "drained; exiting" {
		t.Fatalf("last line %q, want the drain's end: lines were lost at exit", last)
	}
	if len(rest) <= pipeSize {
		t.Fatalf("%d bytes logged while the %d-byte pipe went unread: the output never stalled", len(rest), pipeSize)
	}
	t.Logf("%d requests answered with stderr stalled, %d bytes of lines written after, %d dropped", len(answered), len(rest), dropped)
}
