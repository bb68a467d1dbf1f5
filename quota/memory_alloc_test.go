//go:build !race

package quota

import (
	"testing"
	"time"
)

// TestMemoryCheckAllocs: a request's key check, member check and
// settlement on the memory store allocate nothing.
func TestMemoryCheckAllocs(t *testing.T) {
	cfg := testConfig(t, "", `      limits: {requests_per_minute: 1000000000, tokens_per_minute: 1000000000000, tokens_per_day: 1000000000000, spend_per_day_usd: 1000000, spend_per_month_usd: 1000000}`,
		`    limits: {requests_per_minute: 1000000000, tokens_per_minute: 1000000000000}`)
	_, p := memQuotas(t, cfg)
	body := []byte(`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)
	model := []byte("gpt-4o")
	now := time.Now() // the hot path passes the time fasthttp read for the request
	var r Request
	n := testing.AllocsPerRun(1000, func() {
		if !r.Begin(p, "acme", body, model, now) {
			t.Fatal("refused")
		}
		if _, ok := r.Enter("openai"); !ok {
			t.Fatal("member refused")
		}
		r.Finish("openai", true, Usage{Input: 10, Output: 20, Known: true}, now)
	})
	if n != 0 {
		t.Fatalf("%v allocations per check; want 0", n)
	}
}
