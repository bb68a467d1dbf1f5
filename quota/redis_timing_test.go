package quota

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/quota/redistest"
)

// BenchmarkRedisCheck is one key check (one script round trip) and its
// queued settlement on a loopback redis-server, from 64 goroutines: what
// the Redis store adds to a request, and its throughput with rueidis's
// auto-pipelining.
func BenchmarkRedisCheck(b *testing.B) {
	srv := redistest.Start(b)
	cfg := testConfig(b, "quotas:\n  store: redis\n  redis:\n    url: "+srv.URL()+"\n    timeout: 1s\n",
		`      limits: {requests_per_minute: 1000000000, tokens_per_minute: 1000000000000}`, "")
	client, err := Connect(cfg.Quotas.Redis)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	q := New(b.Context(), cfg, client, nopLog)
	p := q.Plan(cfg)
	body := []byte(`{"model":"gpt-4o","max_tokens":100}`)
	model := []byte("gpt-4o")
	now := time.Now()    // the hot path passes the time fasthttp read for the request
	b.SetParallelism(32) // 64 goroutines on 2 CPUs
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var r Request
		for pb.Next() {
			if !r.Begin(p, "acme", body, model, now) {
				b.Fatal("refused")
			}
			r.Finish("openai", true, 10, 20, true, now)
		}
	})
}
