package quota

import (
	"testing"
	"time"
)

// BenchmarkMemoryCheck is one key check and its settlement on the memory
// store (the figure in docs/quotas.md, Cost), from every CPU at once.
func BenchmarkMemoryCheck(b *testing.B) {
	cfg := testConfig(b, "", `      limits: {requests_per_minute: 1000000000, tokens_per_minute: 1000000000000, tokens_per_day: 1000000000000, spend_per_day_usd: 1000000}`, "")
	_, p := memQuotas(b, cfg)
	body := []byte(`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)
	model := []byte("gpt-4o")
	now := time.Now() // the hot path passes the time fasthttp read for the request
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var r Request
		for pb.Next() {
			if !r.Begin(p, "acme", body, model, now) {
				b.Fatal("refused")
			}
			r.Finish("openai", true, Usage{Input: 10, Output: 20, Known: true}, now)
		}
	})
}

// BenchmarkMemoryCheckSerial is BenchmarkMemoryCheck from one goroutine:
// the latency a request pays.
func BenchmarkMemoryCheckSerial(b *testing.B) {
	cfg := testConfig(b, "", `      limits: {requests_per_minute: 1000000000, tokens_per_minute: 1000000000000, tokens_per_day: 1000000000000, spend_per_day_usd: 1000000}`, "")
	_, p := memQuotas(b, cfg)
	body := []byte(`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)
	model := []byte("gpt-4o")
	now := time.Now() // the hot path passes the time fasthttp read for the request
	b.ReportAllocs()
	var r Request
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if !r.Begin(p, "acme", body, model, now) {
			b.Fatal("refused")
		}
		r.Finish("openai", true, Usage{Input: 10, Output: 20, Known: true}, now)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "ns/check")
}
