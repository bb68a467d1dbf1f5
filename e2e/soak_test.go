package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/daemon"
)

// The fault-injection soak of issue 10 ("Prove it"): concurrent clients
// (plain, streaming, departing mid-request, slowloris) against chaotic
// upstreams (resets, hangs, partial bodies, mid-stream cuts, 5xx and 429
// storms, garbage), with a reload (SIGHUP's work) every 2 s. It asserts that
// every request gets a complete answer or a properly ended stream, that no
// upstream is called outside the chain of the request's rule, that nothing
// panics, and that the goroutines return to their baseline once it is over.
//
// soakDuration is the load phase; SWITCHYARD_SOAK (a Go duration) changes it.
const soakDuration = 10 * time.Second

// soakConfig routes: m-ab -> [a, b] (reversed in the odd variant); m-c ->
// [c]; metadata tier gold -> [c, a]; anything else -> targets[0] = a. The
// variants differ in chain order and retry, never in chain membership, so a
// request's allowed targets are known whichever config served it.
func soakConfig(variant int, a, b, c string) string {
	ab, attempts := "[a, b]", 1
	if variant%2 == 1 {
		ab, attempts = "[b, a]", 2
	}
	return fmt.Sprintf(`server:
  listen: 127.0.0.1:0
  request_timeout: 3s
  shutdown_timeout: 5s
log:
  level: warn
  format: json
  access_log: false
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m-ab, target_keys: %s}
    - {key: model, value: m-c, target_key: c}
    - {key: metadata, field: tier, value: gold, target_keys: [c, a]}
targets:
  - {virtual_key: a, provider: openai, base_url: %q, api_key: key-a, timeout: 800ms,
     retry: {attempts: %d, initial_backoff_ms: 10}, circuit_breaker: {failure_threshold: 5, timeout: 1s}}
  - {virtual_key: b, provider: openai, base_url: %q, api_key: key-b, timeout: 800ms,
     circuit_breaker: {failure_threshold: 5, timeout: 1s}}
  - {virtual_key: c, provider: openai, base_url: %q, api_key: key-c, timeout: 800ms,
     circuit_breaker: {failure_threshold: 5, timeout: 1s}}
`, ab, a, attempts, b, c)
}

// soakRoutes: model, metadata header, the targets the request may reach.
var soakRoutes = []struct{ model, metadata, chain string }{
	{"m-ab", "", "ab"},
	{"m-c", "", "c"},
	{"m-x", `{"tier":"gold"}`, "ca"},
	{"m-x", "", "a"},
	{"m-ab", `{"tier":"gold"}`, "ab"}, // the model rule comes first
}

// soakTally counts outcomes by kind.
type soakTally struct {
	mu     sync.Mutex
	counts map[string]int
	bad    []string
}

func (s *soakTally) add(kind string) {
	s.mu.Lock()
	s.counts[kind]++
	s.mu.Unlock()
}

func (s *soakTally) fail(format string, args ...any) {
	s.mu.Lock()
	if len(s.bad) < 20 {
		s.bad = append(s.bad, fmt.Sprintf(format, args...))
	}
	s.counts["BAD"]++
	s.mu.Unlock()
}

// checkAnswer judges one complete answer of the gateway to a request for
// model (every upstream echoes the model it was asked for, so another
// request's answer shows).
func checkAnswer(tally *soakTally, id, model string, stream bool, status int, ctype string, body []byte) {
	switch status {
	case 200:
	case 429, 502, 503, 504:
		if !bytes.HasPrefix(body, []byte(`{"error":{"message":`)) || !json.Valid(body) {
			tally.fail("%s: %d with a body that is not the error envelope: %q", id, status, body)
			return
		}
		tally.add(strconv.Itoa(status))
		return
	default:
		tally.fail("%s: unexpected status %d: %q", id, status, body)
		return
	}
	if !stream {
		if string(body) == chaosBadJSON {
			// Target c's own malformed 200, relayed byte for byte as
			// the openai provider's bodies are (docs/api.md, HTTP surface and headers): complete, if
			// not what a client hoped for.
			tally.add("200 relayed garbage")
			return
		}
		var v struct {
			Model   string            `json:"model"`
			Choices []json.RawMessage `json:"choices"`
		}
		if err := json.Unmarshal(body, &v); err != nil || len(v.Choices) == 0 {
			tally.fail("%s: 200 with an incomplete completion: %q", id, body)
			return
		}
		if v.Model != model {
			tally.fail("%s: asked for %s, answered for %s: %q", id, model, v.Model, body)
			return
		}
		tally.add("200")
		return
	}
	if !strings.HasPrefix(ctype, "text/event-stream") {
		tally.fail("%s: stream answered as %q: %q", id, ctype, body)
		return
	}
	// A stream ends with data: [DONE], or with an error frame and no [DONE].
	var last string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "data:") {
			last = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
	switch {
	case !strings.Contains(string(body), `"model":"`+model+`"`) && !strings.HasPrefix(last, `{"error":`):
		tally.fail("%s: a stream for %s that never names it: %q", id, model, body)
	case last == "[DONE]":
		tally.add("stream done")
	case strings.HasPrefix(last, `{"error":`) && json.Valid([]byte(last)) && !strings.Contains(string(body), "data: [DONE]"):
		tally.add("stream error frame")
	default:
		tally.fail("%s: stream without a proper end; last frame %q", id, last)
	}
}

// liveGoroutines counts goroutines, leaving out fasthttp's cleaners that
// sleep a fixed period before they look again and exit (bounded, not
// leaks): a HostClient's idle-connection cleaner (MaxIdleConnDuration) and
// a stopped server's worker-pool cleaner (MaxIdleWorkerDuration); and two
// process-wide singletons, started by the first server and dialer and never
// stopped (the Date header ticker, the DNS cache cleaner).
func liveGoroutines() (int, string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var kept []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "connsCleaner") || strings.Contains(g, "fasthttp.(*workerPool).Start.func") ||
			strings.Contains(g, "fasthttp.updateServerDate") ||
			strings.Contains(g, "tcpAddrsClean") {
			continue
		}
		n++
		kept = append(kept, g)
	}
	return n, strings.Join(kept, "\n\n")
}

func TestSoakFaultInjection(t *testing.T) {
	if testing.Short() {
		t.Skip("soak")
	}
	dur := soakDuration
	if v := os.Getenv("SWITCHYARD_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SWITCHYARD_SOAK: %v", err)
		}
		dur = d
	}
	baseline, _ := liveGoroutines()

	ledger := &soakLedger{calls: map[string]int{}}
	a, b := startSoakMock(t, "a", ledger), startSoakMock(t, "b", ledger)
	c := chaosServer(ledger)
	cURL := c.URL + "/v1"

	dir := t.TempDir()
	path := filepath.Join(dir, "switchyard.yaml")
	write := func(variant int) {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(soakConfig(variant, a.url, b.url, cURL)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	logs := &syncBuffer{}
	d, err := daemon.New(path, "127.0.0.1:0", logs)
	if err != nil {
		t.Fatalf("daemon.New: %v\n%s", err, logs)
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	addr := d.Addr().String()
	base := "http://" + addr

	tr := &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 15 * time.Second}
	tally := &soakTally{counts: map[string]int{}}
	var seq atomic.Int64
	stop := make(chan struct{})
	var chaos, clients sync.WaitGroup
	chaos.Add(2)
	go soakChaos(a.m, 1, stop, &chaos)
	go soakChaos(b.m, 2, stop, &chaos)

	// Reloads every 2 s, alternating the variants.
	var reloads atomic.Int32
	chaos.Add(1)
	go func() {
		defer chaos.Done()
		for v := 1; ; v++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Second):
			}
			write(v)
			if got := d.Reload(); got != daemon.ReloadSuccess {
				tally.fail("reload %d: %q", v, got)
			}
			reloads.Add(1)
		}
	}()

	request := func(stream bool) (id string, body []byte, meta, model string) {
		r := soakRoutes[rand.IntN(len(soakRoutes))]
		id = fmt.Sprintf("soak-%s-%d", r.chain, seq.Add(1))
		body, _ = json.Marshal(map[string]any{"model": r.model, "stream": stream,
			"messages": []map[string]string{{"role": "user", "content": "hi"}}})
		return id, body, r.metadata, r.model
	}
	// Plain and streaming clients: every answer must be complete.
	caller := func(stream bool) {
		defer clients.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			id, body, meta, model := request(stream)
			req, _ := http.NewRequest("POST", base+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", id)
			if meta != "" {
				req.Header.Set("X-Gateway-Metadata", meta)
			}
			resp, err := client.Do(req)
			if err != nil {
				tally.fail("%s: %v", id, err)
				continue
			}
			got, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				tally.fail("%s: reading the answer: %v (got %q)", id, err, got)
				continue
			}
			checkAnswer(tally, id, model, stream, resp.StatusCode, resp.Header.Get("Content-Type"), got)
			if resp.StatusCode != 200 {
				time.Sleep(5 * time.Millisecond) // fast refusals would only spin the CPU
			}
		}
	}
	// Departing clients send a request and hang up before (or while) the
	// answer comes.
	// That a departed client's upstream call is cancelled within 1 s
	// (counted "canceled", breaker untouched) is proved by
	// disconnect_test.go; the soak requires that departures cost no panic,
	// no leaked goroutine and no wrong answer to anyone else.
	departer := func() {
		defer clients.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			id, body, meta, _ := request(rand.IntN(2) == 0)
			conn, err := net.DialTimeout("tcp4", addr, 2*time.Second)
			if err != nil {
				tally.fail("%s: dial: %v", id, err)
				continue
			}
			head := "POST /v1/chat/completions HTTP/1.1\r\nHost: " + addr + "\r\nX-Request-Id: " + id +
				"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
			if meta != "" {
				head += "X-Gateway-Metadata: " + meta + "\r\n"
			}
			msg := head + "\r\n" + string(body)
			if rand.IntN(4) == 0 {
				msg = msg[:len(msg)-5] // gone before the body ends
			}
			_, _ = io.WriteString(conn, msg)
			_ = conn.SetReadDeadline(time.Now().Add(time.Duration(rand.IntN(400)) * time.Millisecond))
			_, _ = bufio.NewReader(conn).Peek(1 + rand.IntN(300))
			_ = conn.Close()
			tally.add("departed")
		}
	}
	// Slowloris clients trickle a head and never finish it.
	slowloris := func() {
		defer clients.Done()
		conn, err := net.DialTimeout("tcp4", addr, 2*time.Second)
		if err != nil {
			tally.fail("slowloris dial: %v", err)
			return
		}
		defer conn.Close()
		head := "POST /v1/chat/completions HTTP/1.1\r\nHost: " + addr + "\r\nX-Slow: " + strings.Repeat("z", 200)
		for i := 0; i < len(head); i++ {
			select {
			case <-stop:
				tally.add("slowloris")
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{head[i]}); err != nil {
				tally.fail("slowloris cut after %d bytes: %v", i, err)
				return
			}
		}
		<-stop
		tally.add("slowloris")
	}
	for i := 0; i < 5; i++ {
		clients.Add(2)
		go caller(false)
		go caller(true)
	}
	for i := 0; i < 2; i++ {
		clients.Add(2)
		go departer()
		go slowloris()
	}

	time.Sleep(dur)
	close(stop)
	t0 := time.Now()
	clients.Wait()
	chaos.Wait()
	t.Logf("clients stopped in %v", time.Since(t0))

	// No panic was recovered, in a request or a reload.
	if strings.Contains(logs.String(), "BUG:") {
		t.Errorf("the gateway logged a bug:\n%s", logs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	t.Logf("shut down in %v", time.Since(t0))
	tr.CloseIdleConnections()
	d.Pool().Retain(nil)
	_ = a.srv.Shutdown()
	_ = b.srv.Shutdown()
	c.CloseClientConnections()
	c.Close()

	tally.mu.Lock()
	t.Logf("soak %v: %d reloads; answers %v; upstream calls %v", dur, reloads.Load(), tally.counts, ledger.calls)
	for _, b := range tally.bad {
		t.Error(b)
	}
	answered := tally.counts["200"] + tally.counts["stream done"]
	tally.mu.Unlock()
	if answered == 0 || tally.counts["stream error frame"]+tally.counts["502"]+tally.counts["503"]+tally.counts["504"] == 0 {
		t.Errorf("the soak did not exercise both successes and failures: %v", tally.counts)
	}
	ledger.mu.Lock()
	for _, v := range ledger.violations {
		t.Errorf("a call outside its rule's chain: %s", v)
	}
	ledger.mu.Unlock()

	// Goroutines back to the baseline (bounded wait).
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, stacks := liveGoroutines()
		if n <= baseline {
			t.Logf("goroutines back to %d (baseline %d) %v after the load", n, baseline, time.Since(t0))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after the soak, %d before:\n%s", n, baseline, stacks)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
