package quota_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/mock"
	"github.com/switchyard/switchyard/quota/redistest"
)

// buildGateway builds the switchyard binary from the module root.
func buildGateway(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "switchyard")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type replica struct {
	base string
	logs *strings.Builder
	mu   *sync.Mutex
}

// startReplica runs the binary on cfg and waits for its "serving" line.
func startReplica(t *testing.T, bin, cfg string) replica {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "-config", path, "-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "SWITCHYARD_CONFIG=")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := replica{logs: &strings.Builder{}, mu: &sync.Mutex{}}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.logs.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			var rec struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Message == "serving" {
				addr <- rec.Addr
			}
		}
	}()
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	select {
	case a := <-addr:
		r.base = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatalf("replica did not start:\n%s", r.logs)
	}
	return r
}

const (
	reqKey = "sy-requests-key-0123456789abcdef0123"
	tokKey = "sy-tokens-key-0123456789abcdef012345"
)

// TestThreeReplicasShareOneRedis: three gateway processes (the real
// binary) share one Redis through a loopback proxy; one key limited to 120
// requests a minute and one to 6,000 tokens a minute (half of its requests
// streams, usage reported by the mock) are hammered through all three for
// 30 s: admitted requests and admitted tokens stay within
// limit + limit × t / 60 and reach at least 95% of it. The load goes on for
// 12 s more, during which the proxy stalls Redis for 6 s (on_store_failure:
// local, replicas: 3) and then forwards again: the three replicas together
// stay within the bound over the whole run;
// no request waits on the stalled store past a bound far below a hang;
// each replica logs each switch once.
func TestThreeReplicasShareOneRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("30 s load test")
	}
	srv := redistest.Start(t)
	px := redistest.NewProxy(t, srv.Addr())
	up, err := mock.Start("127.0.0.1:0", mock.Options{Name: "up"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.Close() })
	prompt, completion := up.UsageFigures()
	perRequest := int64(prompt + completion)
	bin := buildGateway(t)
	cfg := fmt.Sprintf(`
log: {level: info, access_log: false}
strategy:
  mode: conditional
  conditions:
    - key: model
      value: mock-model
      target_key: up
targets:
  - virtual_key: up
    provider: openai
    base_url: %s
auth:
  keys:
    - name: requests
      key: %s
      limits: {requests_per_minute: 120}
    - name: tokens
      key: %s
      limits: {tokens_per_minute: 6000}
quotas:
  store: redis
  redis: {url: %s, timeout: 250ms}
  on_store_failure: local
  replicas: 3
`, up.BaseURL(), reqKey, tokKey, px.URL())
	var reps []replica
	for i := 0; i < 3; i++ {
		reps = append(reps, startReplica(t, bin, cfg))
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	post := func(base, key, body string) (int, []byte, time.Duration) {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil, 0
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, b, time.Since(t0)
	}
	// Phase 1, 0-30 s: the hammer. Phase 2, 30-42 s: the same load while
	// the proxy stalls Redis from 32 to 38 s.
	const run, faultAt, faultFor, total = 30 * time.Second, 32 * time.Second, 6 * time.Second, 42 * time.Second
	var reqOK, tokens, other atomic.Int64
	var slowest, lastSent atomic.Int64
	var phase1Req, phase1Tok int64
	start := time.Now()
	stop := start.Add(total)
	var wg sync.WaitGroup
	worker := func(i int, key string, count func(code int, body []byte)) {
		defer wg.Done()
		for n := 0; time.Now().Before(stop); n++ {
			body := `{"model":"mock-model","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`
			if key == tokKey && n%2 == 1 {
				body = `{"model":"mock-model","max_tokens":20,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
			}
			if time.Since(start) < run {
				lastSent.Store(int64(time.Since(start)))
			}
			code, b, took := post(reps[(i+n)%3].base, key, body)
			for d := int64(took); d > slowest.Load(); {
				if slowest.CompareAndSwap(slowest.Load(), d) {
					break
				}
			}
			count(code, b)
			time.Sleep(5 * time.Millisecond)
		}
	}
	for i := 0; i < 3; i++ {
		wg.Add(2)
		go worker(i, reqKey, func(code int, _ []byte) {
			switch code {
			case 200:
				reqOK.Add(1)
			case 429:
			default:
				other.Add(1)
			}
		})
		go worker(i, tokKey, func(code int, b []byte) {
			switch code {
			case 200:
				tokens.Add(perRequest)
			case 429:
			default:
				other.Add(1)
			}
		})
	}
	time.Sleep(run)
	phase1Req, phase1Tok = reqOK.Load(), tokens.Load()
	phase1 := time.Since(start).Seconds() // answers in flight may still count: a hair generous
	time.Sleep(faultAt - run)
	px.Stall(true)
	time.Sleep(faultFor)
	px.Stall(false)
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	// The floor counts to the last request sent in phase 1 (no refill
	// after it could be used).
	sent := time.Duration(lastSent.Load()).Seconds()

	check := func(what string, got, limit int64, secs, floorSecs float64) {
		bound := float64(limit) + float64(limit)*secs/60
		t.Logf("%s: admitted %d in %.1f s; bound %.0f", what, got, secs, bound)
		if float64(got) > bound+0.5 {
			t.Errorf("%s: admitted %d > limit + limit × t / 60 = %.1f", what, got, bound)
		}
		if floorSecs > 0 {
			floor := float64(limit) + float64(limit)*floorSecs/60
			t.Logf("%s: %.1f%% of the %.0f the requests sent could use", what, 100*float64(got)/floor, floor)
			if float64(got) < 0.95*floor {
				t.Errorf("%s: admitted %d < 95%% of %.1f", what, got, floor)
			}
		}
	}
	check("requests, 30 s hammer", phase1Req, 120, phase1, sent)
	check("tokens, 30 s hammer", phase1Tok, 6000, phase1, sent)
	check("requests, with the stall", reqOK.Load(), 120, elapsed, 0)
	check("tokens, with the stall", tokens.Load(), 6000, elapsed, 0)
	if other.Load() != 0 {
		t.Errorf("%d answers neither 200 nor 429", other.Load())
	}
	// A request that waited out the stall would take 6 s or more. The
	// bound leaves room for the known redial case (timeout plus rueidis's
	// closing PING, about 1.3 s; docs/quotas.md) on a loaded machine,
	// where it took 3.4 s.
	if d := time.Duration(slowest.Load()); d > 5*time.Second {
		t.Errorf("a request took %s with the store stalled (timeout 250ms)", d)
	}
	// Each switch is logged once: every failure line has its recovery line.
	// (A loaded machine can add short outages of its own: a store call
	// slower than the timeout is a failure too.)
	for _, r := range reps {
		r.mu.Lock()
		logs := r.logs.String()
		r.mu.Unlock()
		t.Logf("replica: %d store failures logged", strings.Count(logs, "quota store failed"))
		failed, back := strings.Count(logs, "quota store failed"), strings.Count(logs, "quota store answers again")
		if failed < 1 || failed != back {
			t.Errorf("a replica logged %d failures and %d recoveries; want the stall's, each once:\n%s", failed, back, logs)
		}
	}
}
