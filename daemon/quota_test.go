package daemon

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/mock"
	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/quota/redistest"
)

type quotaRoom = quota.Room

const quotaKey = "sy-quota-key-0123456789abcdef0123"

// quotaConfig: target c (the fallback) is outside the rule's chain [a, b];
// a has its own requests_per_minute; key acme has keyLimits.
func quotaConfig(a, b, c *mock.Server, aLimits, keyLimits string) string {
	return fmt.Sprintf(`
strategy:
  mode: conditional
  conditions:
    - key: model
      value: mock-model
      target_keys: [a, b]
targets:
  - virtual_key: c
    provider: openai
    base_url: %s
    prices: {"mock-*": {input: 1, output: 1}}
  - virtual_key: a
    provider: openai
    base_url: %s
    limits: %s
    prices: {mock-model: {input: 2.5, output: 10}}
  - virtual_key: b
    provider: openai
    base_url: %s
    prices: {mock-model: {input: 1, output: 2}}
auth:
  keys:
    - name: acme
      key: %s
      limits: %s
`, c.BaseURL(), a.BaseURL(), aLimits, b.BaseURL(), quotaKey, keyLimits)
}

func keyedPost(t *testing.T, c *http.Client, url, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+quotaKey)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const quotaChat = `{"model":"mock-model","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`

// TestQuotaTargetLimitInChain: a target with requests_per_minute: 5 in a
// two-member chain serves 5, then the second member serves; the target
// outside the chain never does (the mocks' own counters).
func TestQuotaTargetLimitInChain(t *testing.T) {
	a, b, c := startMock(t, mock.Options{Name: "a"}), startMock(t, mock.Options{Name: "b"}), startMock(t, mock.Options{Name: "c"})
	path := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, path, quotaConfig(a, b, c, "{requests_per_minute: 5}", "{requests_per_minute: 1000}"))
	_, base := startDaemon(t, path, io.Discard)
	cl := newClient()
	for i := 0; i < 12; i++ {
		resp, body := keyedPost(t, cl, base+"/v1/chat/completions", quotaChat)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		want := "a"
		if i >= 5 {
			want = "b"
		}
		if got := resp.Header.Get("X-Gateway-Target"); got != want {
			t.Fatalf("request %d served by %q; want %q", i, got, want)
		}
	}
	if na, nb, nc := a.Stats().Requests, b.Stats().Requests, c.Stats().Requests; na != 5 || nb != 7 || nc != 0 {
		t.Fatalf("mocks counted a=%d b=%d c=%d; want 5, 7, 0", na, nb, nc)
	}
}

// TestQuotaTargetsExhausted: both members out of quota is 429
// target_quota_exhausted with no upstream call, and nothing outside the
// chain is tried.
func TestQuotaTargetsExhausted(t *testing.T) {
	a, b, c := startMock(t, mock.Options{Name: "a"}), startMock(t, mock.Options{Name: "b"}), startMock(t, mock.Options{Name: "c"})
	cfg := strings.Replace(quotaConfig(a, b, c, "{requests_per_minute: 1}", "{requests_per_minute: 1000}"),
		"    prices: {mock-model: {input: 1, output: 2}}", "    prices: {mock-model: {input: 1, output: 2}}\n    limits: {requests_per_minute: 1}", 1)
	path := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, path, cfg)
	_, base := startDaemon(t, path, io.Discard)
	cl := newClient()
	for i := 0; i < 2; i++ {
		if resp, body := keyedPost(t, cl, base+"/v1/chat/completions", quotaChat); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := keyedPost(t, cl, base+"/v1/chat/completions", quotaChat)
	if resp.StatusCode != 429 || !strings.Contains(body, `"code":"target_quota_exhausted"`) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("got %d %s (Retry-After %q)", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if a.Stats().Requests != 1 || b.Stats().Requests != 1 || c.Stats().Requests != 0 {
		t.Fatalf("calls a=%d b=%d c=%d", a.Stats().Requests, b.Stats().Requests, c.Stats().Requests)
	}
}

// TestQuotaKeyLimitHeadersAndSpend: a key's rate limit answers 429
// key_rate_limited with Retry-After and no upstream call, every answer
// carries OpenAI's x-ratelimit-* headers (Anthropic's on messages), and
// spend is logged and counted by key and target.
func TestQuotaKeyLimitHeadersAndSpend(t *testing.T) {
	a, b, c := startMock(t, mock.Options{Name: "a"}), startMock(t, mock.Options{Name: "b"}), startMock(t, mock.Options{Name: "c"})
	path := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, path, quotaConfig(a, b, c, "{requests_per_minute: 100}", "{requests_per_minute: 3, tokens_per_minute: 100000}"))
	logs := &syncBuffer{}
	_, base := startDaemon(t, path, logs)
	cl := newClient()
	for i := 0; i < 3; i++ {
		resp, body := keyedPost(t, cl, base+"/v1/chat/completions", quotaChat)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		h := resp.Header
		if h.Get("x-ratelimit-limit-requests") != "3" || h.Get("x-ratelimit-remaining-requests") != fmt.Sprint(2-i) ||
			h.Get("x-ratelimit-limit-tokens") != "100000" || h.Get("x-ratelimit-reset-requests") == "" || h.Get("x-ratelimit-remaining-tokens") == "" {
			t.Fatalf("request %d headers: %v", i, h)
		}
	}
	resp, body := keyedPost(t, cl, base+"/v1/chat/completions", quotaChat)
	if resp.StatusCode != 429 || !strings.Contains(body, `"code":"key_rate_limited"`) || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("x-ratelimit-remaining-requests") != "0" {
		t.Fatalf("over the limit: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	if a.Stats().Requests != 3 {
		t.Fatalf("upstream calls %d; want 3 (none for the refused one)", a.Stats().Requests)
	}
	resp, body = keyedPost(t, cl, base+"/v1/messages", `{"model":"mock-model","max_tokens":10,"messages":[]}`)
	if resp.StatusCode != 429 || !strings.Contains(body, `"type":"rate_limit_error"`) || resp.Header.Get("anthropic-ratelimit-requests-limit") != "3" ||
		resp.Header.Get("anthropic-ratelimit-requests-reset") == "" || resp.Header.Get("x-ratelimit-limit-requests") != "" {
		t.Fatalf("messages: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	// Spend: 8 prompt × 2.5 + 17 completion × 10 micro-USD = 190 each.
	mresp, err := cl.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.Contains(string(m), `switchyard_spend_usd_total{key="acme",target="a"} 0.00057`) ||
		!strings.Contains(string(m), `switchyard_quota_rejections_total{key="acme",limit="requests_per_minute"} 2`) ||
		!strings.Contains(string(m), "# HELP switchyard_quota_mode 1 for") {
		t.Fatalf("metrics:\n%s", grepLines(string(m), "quota", "spend"))
	}
	if !strings.Contains(logs.String(), `"spend_usd":0.00019`) {
		t.Fatalf("no spend_usd in the access log:\n%s", logs)
	}
}

func grepLines(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestQuotaReloadKeepsCounters: a reload that keeps the key keeps its
// counters; a raised limit applies from the next request.
func TestQuotaReloadKeepsCounters(t *testing.T) {
	a, b, c := startMock(t, mock.Options{Name: "a"}), startMock(t, mock.Options{Name: "b"}), startMock(t, mock.Options{Name: "c"})
	path := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, path, quotaConfig(a, b, c, "{requests_per_minute: 100}", "{requests_per_minute: 2}"))
	d, base := startDaemon(t, path, io.Discard)
	cl := newClient()
	codes := func(n int) (out []int) {
		for i := 0; i < n; i++ {
			resp, _ := keyedPost(t, cl, base+"/v1/chat/completions", quotaChat)
			out = append(out, resp.StatusCode)
		}
		return out
	}
	if got := fmt.Sprint(codes(3)); got != "[200 200 429]" {
		t.Fatalf("before reload: %s", got)
	}
	writeFile(t, path, quotaConfig(a, b, c, "{requests_per_minute: 99}", "{requests_per_minute: 2}"))
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatal(r)
	}
	if got := fmt.Sprint(codes(1)); got != "[429]" {
		t.Fatalf("a reload that keeps the key reset its counters: %s", got)
	}
	writeFile(t, path, quotaConfig(a, b, c, "{requests_per_minute: 99}", "{requests_per_minute: 4}"))
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatal(r)
	}
	if got := fmt.Sprint(codes(3)); got != "[200 200 429]" {
		t.Fatalf("after raising the limit to 4 (2 used): %s", got)
	}
}

// TestQuotaRefundsAndStreams: a member whose attempt failed gives back
// what it reserved (the walk failed over), and a stream's reservation is
// settled to its reported usage when it ends (the console's room shows
// both).
func TestQuotaRefundsAndStreams(t *testing.T) {
	a := startMock(t, mock.Options{Name: "a", FailRate: 1, FailStatus: 503})
	b, c := startMock(t, mock.Options{Name: "b"}), startMock(t, mock.Options{Name: "c"})
	path := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, path, quotaConfig(a, b, c, "{requests_per_minute: 2, tokens_per_minute: 100000}", "{tokens_per_day: 100000}"))
	d, base := startDaemon(t, path, io.Discard)
	cl := newClient()
	for i := 0; i < 4; i++ {
		resp, body := keyedPost(t, cl, base+"/v1/chat/completions", quotaChat)
		if resp.StatusCode != 200 || resp.Header.Get("X-Gateway-Target") != "b" {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	if a.Stats().Requests != 4 {
		t.Fatalf("a was tried %d times; want every time (its failed attempts refunded)", a.Stats().Requests)
	}
	plan := d.Gateway().Load().Quota
	room, _ := plan.RoomOf("a", true)
	if room.Left[0] != 2 || room.Left[1] < 99999 {
		t.Fatalf("a's room after 4 failed attempts: %v; want everything back", room.Left)
	}
	// A stream: usage 8 + 17 = 25 tokens once it ends.
	before, _ := plan.RoomOf("acme", false)
	resp, body := keyedPost(t, cl, base+"/v1/chat/completions",
		`{"model":"mock-model","stream":true,"stream_options":{"include_usage":true},"max_tokens":500,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "[DONE]") {
		t.Fatalf("stream: %d %s", resp.StatusCode, body)
	}
	var after quotaRoom
	for i := 0; i < 100; i++ { // settled when the stream's writer ends, just after the last byte
		after, _ = plan.RoomOf("acme", false)
		if before.Left[2]-after.Left[2] <= 30 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if used := before.Left[2] - after.Left[2]; used != 25 {
		t.Fatalf("the stream took %d tokens of the key's day; want its usage, 25 (reserved 500+)", used)
	}
}

// TestQuotaInConsole: the operator's console shows a key's quota use and a
// target's quota room (GET /api/status).
func TestQuotaInConsole(t *testing.T) {
	a, b, c := startMock(t, mock.Options{Name: "a"}), startMock(t, mock.Options{Name: "b"}), startMock(t, mock.Options{Name: "c"})
	path := filepath.Join(t.TempDir(), "c.yaml")
	cfg := quotaConfig(a, b, c, "{requests_per_minute: 5}", "{requests_per_minute: 10, spend_per_day_usd: 1}")
	// A spend limit needs a price for every model the key can route: the
	// fallback c prices any model.
	cfg = strings.Replace(cfg, `"mock-*": {input: 1, output: 1}`, `"*": {input: 1, output: 1}`, 1)
	writeFile(t, path, cfg+"admin:\n  listen: 127.0.0.1:0\n")
	logs := &syncBuffer{}
	d, base := startDaemon(t, path, logs)
	if err := d.StartConsole(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.stopConsole(t.Context()) })
	cl := newClient()
	for i := 0; i < 3; i++ {
		if resp, body := keyedPost(t, cl, base+"/v1/chat/completions", quotaChat); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	resp, err := cl.Get("http://" + d.ConsoleAddr().String() + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := string(body)
	for _, want := range []string{
		`{"name":"requests_per_minute","limit":10,"used":3,"remaining":7}`,
		`{"name":"spend_per_day_usd","limit":1,"used":0.00057,"remaining":0.99943}`,
		`{"name":"requests_per_minute","limit":5,"used":3,"remaining":2}`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in /api/status:\n%s", want, s)
		}
	}
}

// TestQuotaStoreDownDeny: with store: redis and on_store_failure: deny, a
// Redis that is gone answers 503 quota_store_unavailable with no upstream
// call, whether the key or only the member has limits; Redis back, the
// next requests are served again without a restart.
func TestQuotaStoreDownDeny(t *testing.T) {
	srv := redistest.Start(t)
	a, b, c := startMock(t, mock.Options{Name: "a"}), startMock(t, mock.Options{Name: "b"}), startMock(t, mock.Options{Name: "c"})
	cfg := quotaConfig(a, b, c, "{requests_per_minute: 100}", "{requests_per_minute: 100}")
	cfg = strings.Replace(cfg, "    prices: {mock-model: {input: 1, output: 2}}", "    prices: {mock-model: {input: 1, output: 2}}\n    limits: {requests_per_minute: 100}", 1)
	cfg += "quotas:\n  store: redis\n  redis: {url: " + srv.URL() + ", timeout: 100ms}\n  on_store_failure: deny\n" +
		"  replicas: 2\n"
	// A second key without limits of its own.
	cfg = strings.Replace(cfg, "auth:\n  keys:\n", "auth:\n  keys:\n    - {name: open, key: sy-open-key-0123456789abcdef}\n", 1)
	path := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, path, cfg)
	_, base := startDaemon(t, path, io.Discard)
	cl := newClient()
	openPost := func() (int, string) {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(quotaChat))
		req.Header.Set("Authorization", "Bearer sy-open-key-0123456789abcdef")
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if resp, body := keyedPost(t, cl, base+"/v1/chat/completions", quotaChat); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	srv.Kill()
	calls := a.Stats().Requests + b.Stats().Requests + c.Stats().Requests
	for i := 0; i < 3; i++ {
		if resp, body := keyedPost(t, cl, base+"/v1/chat/completions", quotaChat); resp.StatusCode != 503 || !strings.Contains(body, `"code":"quota_store_unavailable"`) {
			t.Fatalf("key with limits, Redis gone: %d %s", resp.StatusCode, body)
		}
		if code, body := openPost(); code != 503 || !strings.Contains(body, `"code":"quota_store_unavailable"`) {
			t.Fatalf("members with limits, Redis gone: %d %s", code, body)
		}
	}
	if now := a.Stats().Requests + b.Stats().Requests + c.Stats().Requests; now != calls {
		t.Fatalf("%d upstream calls while the store was down", now-calls)
	}
	srv.Restart()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, _ := keyedPost(t, cl, base+"/v1/chat/completions", quotaChat)
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d 5s after Redis came back", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
