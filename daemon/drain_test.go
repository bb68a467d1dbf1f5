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
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/mock"
)

// buildBinary builds switchyard from the repository root into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "switchyard")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = ".." // the module root holds main.go
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

const drainStreamEvents = 15

func drainConfig(slow, streamer string) string {
	return fmt.Sprintf(`
server: {listen: "127.0.0.1:1", shutdown_timeout: 20s}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m-slow, target_key: slow}
    - {key: model, value: m-stream, target_key: streamer}
targets:
  - {virtual_key: slow, provider: openai, base_url: %q, api_key: k1}
  - {virtual_key: streamer, provider: openai, base_url: %q, api_key: k2}
`, slow, streamer)
}

// TestSIGTERMDrainsProcess runs the built binary, starts a slow request and
// a stream through it, sends SIGTERM and checks: the drain starts, /readyz
// answers 503 on a request that arrives during the drain, new connections
// are refused, the slow answer and the whole stream (ending with [DONE])
// arrive, and the process exits 0 without waiting out shutdown_timeout for
// an idle keep-alive connection.
func TestSIGTERMDrainsProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	slow := startMock(t, mock.Options{Name: "slow", Latency: 1500 * time.Millisecond})
	streamer := startMock(t, mock.Options{Name: "streamer", StreamEvents: drainStreamEvents,
		StreamInterval: 100 * time.Millisecond})
	path := filepath.Join(dir, "switchyard.yaml")
	writeFile(t, path, drainConfig(slow.BaseURL(), streamer.BaseURL()))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "-config", path, "-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "SWITCHYARD_CONFIG=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	addrc := make(chan string, 1)
	drainc := make(chan struct{})
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logs, line)
			var rec struct{ Message, Addr string }
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			switch {
			case rec.Message == "serving":
				addrc <- rec.Addr
			case strings.HasPrefix(rec.Message, "draining"):
				close(drainc)
			}
		}
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-time.After(20 * time.Second):
		t.Fatalf("no serving line:\n%s", logs)
	}
	base := "http://" + addr

	// An idle keep-alive connection: the drain must close it, not wait for
	// it (else the exit below would wait for shutdown_timeout, 20 s).
	idle := newClient()
	if code, _ := getWith(t, idle, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("healthz %d", code)
	}

	// A probe that will arrive during the drain: its connection is open and
	// its first bytes are in, so the server counts it as active.
	probe, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if _, err := io.WriteString(probe, "GET /readyz HTTP/1.1\r\nHost: localhost\r\n"); err != nil {
		t.Fatal(err)
	}

	type result struct {
		a    answer
		err  error
		done time.Time
	}
	slowc, streamc := make(chan result, 1), make(chan result, 1)
	streamHeaders := make(chan struct{})
	c := newClient()
	go func() {
		a, err := chat(c, base, "m-slow", false)
		slowc <- result{a, err, time.Now()}
	}()
	go func() {
		resp, err := c.Post(base+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"m-stream","stream":true,"messages":[]}`))
		close(streamHeaders)
		if err != nil {
			streamc <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		streamc <- result{answer{status: resp.StatusCode, target: resp.Header.Get("X-Gateway-Target"), body: string(b)}, err, time.Now()}
	}()
	<-streamHeaders // the stream has committed to the client
	waitFor(t, 5*time.Second, "the slow request to reach its upstream", func() bool { return slow.Stats().Requests == 1 })

	sigAt := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-drainc:
	case <-time.After(5 * time.Second):
		t.Fatalf("no drain line after SIGTERM:\n%s", logs)
	}
	// The listener closes: new connections are refused.
	waitFor(t, 3*time.Second, "the listener to close", func() bool {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return true
		}
		conn.Close()
		return false
	})
	// The probe, finished now, sees /readyz 503.
	if _, err := io.WriteString(probe, "\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = probe.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(probe), nil)
	if err != nil {
		t.Fatalf("readyz during the drain: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "draining") {
		t.Fatalf("readyz during the drain: %d %q, want 503 draining", resp.StatusCode, body)
	}

	finished := func(name string, ch chan result) answer {
		t.Helper()
		select {
		case r := <-ch:
			if r.err != nil || r.a.status != http.StatusOK {
				t.Fatalf("%s during the drain: status %d, err %v, body %s", name, r.a.status, r.err, r.a.body)
			}
			if !r.done.After(sigAt) {
				t.Fatalf("%s finished before SIGTERM; the test proves nothing", name)
			}
			return r.a
		case <-time.After(15 * time.Second):
			t.Fatalf("%s did not finish during the drain", name)
		}
		return answer{}
	}
	if a := finished("slow request", slowc); a.target != "slow" || !strings.Contains(a.body, `"chat.completion"`) {
		t.Fatalf("slow answer from %q: %s", a.target, a.body)
	}
	if a := finished("stream", streamc); a.target != "streamer" {
		t.Fatalf("stream answered by %q", a.target)
	} else if err := checkStream(a.body, drainStreamEvents); err != nil {
		t.Fatalf("stream cut by the drain: %v\n%s", err, a.body)
	}
	if slow.Stats().Requests != 1 || streamer.Stats().Streams != 1 {
		t.Fatalf("upstream calls: slow %d, streams %d; want 1 each", slow.Stats().Requests, streamer.Stats().Streams)
	}

	waitErr := make(chan error, 1)
	go func() { <-logsDone; waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("process exit: %v\n%s", err, logs)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("process did not exit after the drain:\n%s", logs)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	if !strings.Contains(logs.String(), "drained; exiting") {
		t.Fatalf("no clean drain line:\n%s", logs)
	}
}

// TestDrainCutShort: when server.shutdown_timeout passes with a request
// still running, or a second SIGTERM/SIGINT arrives during the drain (or
// during server.drain_delay), run stops waiting, logs why and still
// returns 0.
func TestDrainCutShort(t *testing.T) {
	for _, tc := range []struct {
		name, timeout, delay, logLine string
		second                        os.Signal
	}{
		{"timeout", "300ms", "0s", "shutdown_timeout reached", nil},
		{"second signal", "30s", "0s", "drain cut short by a second signal", os.Interrupt},
		{"second signal during drain_delay", "30s", "30s", "drain cut short by a second signal", syscall.SIGTERM},
		// The timeout counts from the end of the delay, and still cuts.
		{"timeout after drain_delay", "300ms", "200ms", "shutdown_timeout reached", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := startHeld(t)
			path := cfgPath(t)
			body := strings.Replace(oneTarget("127.0.0.1:1", held.url, ""),
				"server: {", "server: {shutdown_timeout: "+tc.timeout+", drain_delay: "+tc.delay+", ", 1)
			writeFile(t, path, body)

			sigs := make(chan os.Signal, 2)
			logs := &syncBuffer{}
			started := make(chan *Daemon, 1)
			exit := make(chan int, 1)
			go func() { exit <- run(path, "127.0.0.1:0", logs, sigs, func(d *Daemon) { started <- d }) }()
			d := <-started
			go func() { _, _ = chat(newClient(), "http://"+d.Addr().String(), "m", false) }()
			waitFor(t, 5*time.Second, "the request to reach its upstream", func() bool { return held.arrived.Load() == 1 })

			t0 := time.Now()
			sigs <- syscall.SIGTERM
			if tc.second != nil {
				waitFor(t, 5*time.Second, "the drain to start", func() bool { return strings.Contains(logs.String(), "draining") })
				sigs <- tc.second
			}
			select {
			case code := <-exit:
				if code != 0 {
					t.Fatalf("exit %d, want 0", code)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the drain was not cut short")
			}
			if held.answered.Load() {
				t.Fatal("the held request was answered; the drain was not cut short")
			}
			if took := time.Since(t0); took > 4*time.Second {
				t.Fatalf("drain took %v", took)
			}
			if !strings.Contains(logs.String(), tc.logLine) {
				t.Fatalf("no %q line:\n%s", tc.logLine, logs)
			}
		})
	}
}

// held is an upstream that holds every request until the test ends.
type held struct {
	url      string
	arrived  atomic.Int32
	answered atomic.Bool
}

func startHeld(t *testing.T) *held {
	t.Helper()
	h := &held{}
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.arrived.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		h.answered.Store(true)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[]}`)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		close(release)
		_ = srv.Close()
	})
	h.url = "http://" + ln.Addr().String() + "/v1"
	return h
}

// TestDrainDelay runs the built binary with drain_delay: 3s and a stream
// in flight, sends SIGTERM and checks: /readyz answers 503 at once, yet
// new connections are still accepted and served (a chat completion gets
// 200) during the delay, and a keep-alive connection from before is served
// with Connection: close; the listener stays open at least drain_delay and
// then refuses connections; the stream started before SIGTERM completes;
// the process exits 0.
func TestDrainDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const delay = 3 * time.Second
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	fast := startMock(t, mock.Options{Name: "fast"})
	// 60 events 100 ms apart: the stream outlives the delay.
	streamer := startMock(t, mock.Options{Name: "streamer", StreamEvents: 60, StreamInterval: 100 * time.Millisecond})
	path := filepath.Join(dir, "switchyard.yaml")
	cfg := strings.Replace(drainConfig(fast.BaseURL(), streamer.BaseURL()),
		"shutdown_timeout: 20s", "shutdown_timeout: 20s, drain_delay: 3s", 1)
	writeFile(t, path, cfg)
	p := startProc(t, bin, path)
	base := "http://" + p.addr

	streamc := make(chan answer, 1)
	streamHeaders := make(chan struct{})
	go func() {
		// The stream takes 6 s at the mock and more on a loaded machine:
		// the client waits longer than newClient's 10 s; the select below
		// bounds the wait.
		c := newClient()
		c.Timeout = time.Minute
		resp, err := c.Post(base+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"m-stream","stream":true,"messages":[]}`))
		close(streamHeaders)
		if err != nil {
			streamc <- answer{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			b = append(b, "\nread error: "+err.Error()...)
		}
		streamc <- answer{status: resp.StatusCode, target: resp.Header.Get("X-Gateway-Target"), body: string(b)}
	}()
	<-streamHeaders
	// A keep-alive connection opened before SIGTERM.
	kept := newClient()
	if code, _ := getWith(t, kept, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("healthz %d", code)
	}

	sigAt := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, 2*time.Second, "draining")
	// Fresh connections, no keep-alive: each one is a new accept.
	fresh := func() *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	}
	if code, body := getWith(t, fresh(), base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz during drain_delay: %d %q, want 503", code, body)
	}
	if a, err := chat(fresh(), base, "m-slow", false); err != nil || a.status != http.StatusOK || a.target != "slow" {
		t.Fatalf("a new connection during drain_delay: %v, status %d from %q, want 200 from slow", err, a.status, a.target)
	}
	// The kept connection is still served, and told to go.
	resp, err := kept.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("a kept connection during drain_delay: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !resp.Close {
		t.Fatalf("kept connection during drain_delay: %d, Connection: close %v; want 200 and close", resp.StatusCode, resp.Close)
	}
	closedAt := p.waitLog(t, delay+5*time.Second, "drain_delay over")
	if open := closedAt.Sub(sigAt); open < delay {
		t.Fatalf("listener closed %v after SIGTERM, before drain_delay (%v)", open, delay)
	}
	waitFor(t, 3*time.Second, "the listener to refuse connections", func() bool {
		conn, err := net.DialTimeout("tcp", p.addr, 200*time.Millisecond)
		if err != nil {
			return true
		}
		conn.Close()
		return false
	})
	select {
	case a := <-streamc:
		if a.status != http.StatusOK || a.target != "streamer" {
			t.Fatalf("stream: %d from %q: %s", a.status, a.target, a.body)
		}
		if err := checkStream(a.body, 60); err != nil {
			t.Fatalf("stream cut by the drain: %v\n%s", err, a.body)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the stream did not finish during the drain")
	}
	p.wantExit0(t, 10*time.Second)
	if !strings.Contains(p.logs.String(), "drained; exiting") {
		t.Fatalf("no clean drain line:\n%s", p.logs)
	}
}
