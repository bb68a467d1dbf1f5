package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/quota/redistest"
)

// Cached tokens end to end (docs/quotas.md, Cached tokens): a Claude Code
// tenant whose every turn resends a large context and reads nearly all of
// it from Anthropic's cache.

// The agent's turn, as the fake Anthropic below reports it: 500 uncached
// input tokens, 100 written to the cache, 25,000 read from it, 200 output.
const (
	turnInput, turnWrite, turnRead, turnOutput = 500, 100, 25000, 200
	turnCounted                                = turnInput + turnWrite + turnOutput // cache reads not counted
	turnMaxTokens                              = 1000
)

// cachingAnthropic is a fake Anthropic Messages API on 127.0.0.1 that
// reports the agent's turn. A stream whose body asks to be held (the text
// "HOLD") sends message_start, signals started and waits for a token on
// release before it finishes.
type cachingAnthropic struct {
	srv     *httptest.Server
	calls   atomic.Int64
	started chan struct{}
	release chan struct{}
}

func startCachingAnthropic(t *testing.T) *cachingAnthropic {
	a := &cachingAnthropic{started: make(chan struct{}, 64), release: make(chan struct{}, 64)}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

const turnUsage = `"usage":{"input_tokens":500,"cache_creation_input_tokens":100,"cache_read_input_tokens":25000,"output_tokens":%d}`

func (a *cachingAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	a.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,`+turnUsage+`}`, turnOutput)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-6\",\"content\":[],\"stop_reason\":null,"+turnUsage+"}}\n\n", 1)
	fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	fl.Flush()
	if bytes.Contains(body, []byte("HOLD")) {
		a.started <- struct{}{}
		select {
		case <-a.release:
		case <-r.Context().Done():
			return
		}
	}
	fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n")
	fmt.Fprint(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	fmt.Fprintf(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":%d}}\n\n", turnOutput)
	fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	fl.Flush()
}

// Client keys of meteringConfig.
const (
	coderKey  = "sy-coder-key-0123456789abcdef0123"
	strictKey = "sy-strict-key-0123456789abcdef012"
	smallKey  = "sy-small-key-0123456789abcdef0123"
)

// meteringConfig: claude-* goes to the fake Anthropic; key coder has a day
// budget of 60,000 tokens (cache reads not counted, the default), strict
// the same counting cache reads, small a rate of 5,000 tokens a minute.
func meteringConfig(upstream, quotas string) string {
	return `strategy:
  mode: conditional
  conditions:
    - key: model_prefix
      value: claude-
      target_key: anthropic
targets:
  - virtual_key: anthropic
    provider: anthropic
    base_url: ` + upstream + `
    api_key: sk-ant-test
    prices: {"claude-*": {input: 3, output: 15, cache_read: 0.30, cache_write: 3.75}}
auth:
  keys:
    - {name: coder, key: ` + coderKey + `, limits: {tokens_per_day: 60000}}
    - {name: strict, key: ` + strictKey + `, limits: {tokens_per_day: 60000, count_cache_reads: true}}
    - {name: small, key: ` + smallKey + `, limits: {tokens_per_minute: 5000}}
admin:
  listen: 127.0.0.1:0
` + quotas
}

// agentBody is a Messages request of about n bytes: the agent's context.
func agentBody(n int, stream, hold bool) string {
	mark := "go"
	if hold {
		mark = "HOLD"
	}
	head := `{"model":"claude-sonnet-4-6","max_tokens":` + strconv.Itoa(turnMaxTokens) + `,"stream":` + strconv.FormatBool(stream) +
		`,"messages":[{"role":"user","content":"` + mark + ` `
	tail := `"}]}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

type meteringAnswer struct {
	status int
	header http.Header
	body   string
}

func messagesPost(t *testing.T, c *http.Client, base, key, body string) meteringAnswer {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return meteringAnswer{resp.StatusCode, resp.Header, string(b)}
}

// dayUsed reads how much of coder's tokens_per_day the deployment counted:
// from Redis itself with the shared store, else from the console.
func dayUsed(t *testing.T, c *http.Client, d *Daemon, srv *redistest.Server, key string) int64 {
	t.Helper()
	if srv != nil {
		n, _ := strconv.ParseInt(strings.TrimSpace(srv.Do("HGET", "switchyard:{k:"+key+"}:tpd", "u")), 10, 64)
		return n
	}
	_, s := getWith(t, c, "http://"+d.ConsoleAddr().String()+"/api/status")
	var st struct {
		Keys []struct {
			Name  string
			Quota *struct {
				Limits []struct {
					Name string
					Used float64
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		t.Fatal(err)
	}
	for _, k := range st.Keys {
		if k.Name == key && k.Quota != nil {
			for _, l := range k.Quota.Limits {
				if l.Name == "tokens_per_day" {
					return int64(l.Used)
				}
			}
		}
	}
	t.Fatalf("no tokens_per_day for %s in /api/status:\n%s", key, s)
	return 0
}

// TestMeteringCachedAgent, on the memory store and on Redis shared by two
// gateways: the agent's cache reads do not count against its day budget
// (30+ turns of 25,000 cached tokens fit 60,000 where counting them fits
// two); its estimate learns, so eight concurrent 100 KB turns run on the
// gateway that learned while the unlearned estimate refuses the third (and
// the other gateway, still unlearned, refuses one more); settlement brings
// the counter to exactly what the answers reported; and a request larger
// than a limit's whole capacity is refused at once, with no Retry-After
// and no upstream call.
func TestMeteringCachedAgent(t *testing.T) {
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			up := startCachingAnthropic(t)
			var srv *redistest.Server
			quotas := ""
			if store == "redis" {
				srv = redistest.Start(t)
				quotas = "quotas:\n  store: redis\n  redis: {url: " + srv.URL() + ", timeout: 500ms}\n"
			}
			path := filepath.Join(t.TempDir(), "c.yaml")
			writeFile(t, path, meteringConfig(up.srv.URL, quotas))
			da, baseA := startDaemon(t, path, io.Discard)
			if err := da.StartConsole(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { da.stopConsole(t.Context()) })
			baseB := baseA // the memory store has one gateway
			if store == "redis" {
				_, baseB = startDaemon(t, path, io.Discard)
			}
			cl := newClient()
			large := 102400 // 25,600 quarters: 26,600 reserved unlearned
			used := int64(0)
			settled := func(what string) {
				t.Helper()
				waitFor(t, 5*time.Second, what, func() bool { return dayUsed(t, cl, da, srv, "coder") == used })
			}

			// 1. Unlearned: two held turns reserve 53,200 of 60,000; a third,
			// on the other gateway, does not fit and is refused with a wait.
			held := runHeld(t, cl, baseA, coderKey, agentBody(large, true, true), 2, up)
			calls := up.calls.Load()
			a := messagesPost(t, cl, baseB, coderKey, agentBody(large, true, false))
			if a.status != 429 || !strings.Contains(a.body, `"rate_limit_error"`) || a.header.Get("Retry-After") == "" {
				t.Fatalf("third unlearned turn: %d %s (Retry-After %q)", a.status, a.body, a.header.Get("Retry-After"))
			}
			if up.calls.Load() != calls {
				t.Fatal("a refused turn reached the upstream")
			}
			held.release(t, up)
			used += 2 * turnCounted
			settled("the two turns settled to their usage")

			// 2. Heavy cache reads: 28 more turns, 700,000 cached tokens in
			// all, fit the 60,000 budget; the key learns its ratio.
			// Each turn is settled before the next is sent: on Redis a
			// settlement lands a few milliseconds after the answer (off
			// the request path), and while the ratio is still near 1 two
			// unsettled reservations and a third would pass the budget.
			for i := range 28 {
				if a := messagesPost(t, cl, baseA, coderKey, agentBody(large, false, false)); a.status != 200 {
					t.Fatalf("turn %d: %d %s", i, a.status, a.body)
				}
				used += turnCounted
				settled(fmt.Sprintf("turn %d settled", i))
			}
			_, status := getWith(t, cl, "http://"+da.ConsoleAddr().String()+"/api/status")
			if !strings.Contains(status, `"name":"coder"`) || !strings.Contains(status, `"estimate_ratio":0.09`) {
				t.Fatalf("/api/status lacks coder's learned ratio (about 0.09):\n%s", status)
			}
			// The strict key, counting cache reads, fits two such turns.
			admitted := 0
			for range 4 {
				if a := messagesPost(t, cl, baseA, strictKey, agentBody(large, false, false)); a.status == 200 {
					admitted++
				}
			}
			if admitted != 2 {
				t.Fatalf("strict (count_cache_reads: true) admitted %d turns; want 2", admitted)
			}

			// 3. Learned (ratio about 0.09: about 3,300 reserved each): eight
			// concurrent turns fit beside the 24,000 used.
			held = runHeld(t, cl, baseA, coderKey, agentBody(large, true, true), 8, up)
			if store == "redis" {
				// The other gateway has not learned: 26,600 does not fit.
				calls = up.calls.Load()
				if a := messagesPost(t, cl, baseB, coderKey, agentBody(large, true, false)); a.status != 429 {
					t.Fatalf("unlearned gateway beside eight learned turns: %d %s", a.status, a.body)
				}
				if up.calls.Load() != calls {
					t.Fatal("a refused turn reached the upstream")
				}
			}
			held.release(t, up)
			used += 8 * turnCounted
			settled("the eight concurrent turns settled to their usage")

			// 4. Too large: 40 KB on small (5,000 a minute) reserves 11,000.
			calls = up.calls.Load()
			a = messagesPost(t, cl, baseB, smallKey, agentBody(40000, false, false))
			if a.status != 429 || a.header.Get("Retry-After") != "" ||
				!strings.Contains(a.body, "request too large for this key's tokens_per_minute: limit 5000, requested 11000") {
				t.Fatalf("too large: %d %s (Retry-After %q)", a.status, a.body, a.header.Get("Retry-After"))
			}
			// It took nothing: the headers say the bucket is full.
			if a.header.Get("anthropic-ratelimit-tokens-limit") != "5000" || a.header.Get("anthropic-ratelimit-tokens-remaining") != "5000" {
				t.Fatalf("rate-limit headers beside a request too large: %v", a.header)
			}
			// On chat, OpenAI's envelope and code.
			req, _ := http.NewRequest("POST", baseB+"/v1/chat/completions", strings.NewReader(
				`{"model":"claude-sonnet-4-6","max_tokens":1000,"messages":[{"role":"user","content":"`+strings.Repeat("x", 40000)+`"}]}`))
			req.Header.Set("Authorization", "Bearer "+smallKey)
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			chatBody, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "" || !strings.Contains(string(chatBody), `"code":"key_rate_limited"`) ||
				!strings.Contains(string(chatBody), "request too large for this key's tokens_per_minute") || resp.Header.Get("x-ratelimit-remaining-tokens") != "5000" {
				t.Fatalf("too large on chat: %d %s %v", resp.StatusCode, chatBody, resp.Header)
			}
			if up.calls.Load() != calls {
				t.Fatal("a request too large reached the upstream")
			}
			if a := messagesPost(t, cl, baseB, smallKey, agentBody(8000, false, false)); a.status != 200 {
				t.Fatalf("small's request that fits: %d %s", a.status, a.body)
			}

			// The metrics carry the four parts.
			_, metrics := getWith(t, cl, baseA+"/metrics")
			if !strings.Contains(metrics, `switchyard_tokens_total{target="anthropic",key="coder",kind="cache_read"} `+strconv.Itoa(38*turnRead)) {
				t.Fatalf("cache reads of coder on gateway A not %d:\n%s", 38*turnRead, grepLines(metrics, "switchyard_tokens_total"))
			}
		})
	}
}

// heldTurns are streams the fake upstream holds open.
type heldTurns struct {
	n      int
	wg     sync.WaitGroup
	mu     sync.Mutex
	status []int
}

// runHeld starts n streamed turns and returns once each is held by the
// upstream (its reservation made and its stream begun).
func runHeld(t *testing.T, c *http.Client, base, key, body string, n int, up *cachingAnthropic) *heldTurns {
	t.Helper()
	h := &heldTurns{n: n}
	for i := range n {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(body))
			req.Header.Set("x-api-key", key)
			resp, err := c.Do(req)
			st := 0
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				st = resp.StatusCode
			}
			h.mu.Lock()
			h.status = append(h.status, st)
			h.mu.Unlock()
		}()
		select {
		case <-up.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("held turn %d of %d never reached the upstream", i+1, n)
		}
	}
	return h
}

// release lets the held turns finish and waits for their answers.
func (h *heldTurns) release(t *testing.T, up *cachingAnthropic) {
	t.Helper()
	for range h.n {
		up.release <- struct{}{}
	}
	h.wait(t)
}

func (h *heldTurns) wait(t *testing.T) {
	t.Helper()
	h.wg.Wait()
	for _, s := range h.status {
		if s != 200 {
			t.Fatalf("a held turn ended %d", s)
		}
	}
}
