package hotpath

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReloadKeepsInFlightRequestsOnTheirState swaps the configuration while
// requests are in flight: each finishes on the State it loaded (its rule's
// target), none fails, and requests after the swap route by the new rules.
func TestReloadKeepsInFlightRequestsOnTheirState(t *testing.T) {
	a, b := startMock(t, "a"), startMock(t, "b")
	a.hang = 300 * time.Millisecond // a answers slowly, within its timeout
	a.setFault(faultHang)
	const cfg = `
strategy: {mode: conditional, conditions: [{key: model, value: m, target_key: %s}]}
targets:
  - {virtual_key: a, provider: openai, base_url: "{{a}}", api_key: sk-a, timeout: 5s}
  - {virtual_key: b, provider: openai, base_url: "{{b}}", api_key: sk-b, timeout: 5s}
`
	tg := startGateway(t, strings.Replace(cfg, "%s", "a", 1), a, b)

	const inflight = 16
	var wg sync.WaitGroup
	results := make([]response, inflight)
	for i := range inflight {
		wg.Go(func() { results[i] = tg.do("POST", "/v1/chat/completions", `{"model":"m"}`) })
	}
	// Wait until every request reached a, then swap m to b.
	deadline := time.Now().Add(5 * time.Second)
	for a.calls.Load() < inflight && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	tg.reload(strings.Replace(cfg, "%s", "b", 1), a, b)
	after := tg.do("POST", "/v1/chat/completions", `{"model":"m"}`)
	wg.Wait()

	for i, r := range results {
		if r.Status != 200 || r.Header["X-Gateway-Target"] != "a" || !strings.Contains(r.Body, "hello from a") {
			t.Errorf("in-flight request %d: %d target=%q %s", i, r.Status, r.Header["X-Gateway-Target"], r.Body)
		}
	}
	if after.Status != 200 || after.Header["X-Gateway-Target"] != "b" {
		t.Errorf("after the reload: %d target=%q", after.Status, after.Header["X-Gateway-Target"])
	}
	if a.calls.Load() != inflight || b.calls.Load() != 1 {
		t.Errorf("calls a=%d b=%d, want %d and 1", a.calls.Load(), b.calls.Load(), inflight)
	}
}
