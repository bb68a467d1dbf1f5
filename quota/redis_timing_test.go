package quota

import (
	"runtime"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/cputime"
	"github.com/switchyard/switchyard/quota/redistest"
)

// BenchmarkRedisCheck is one key check (one script round trip) and its
// queued settlement on a loopback redis-server, from 64 goroutines: what
// the Redis store adds to a request, and its throughput with rueidis's
// auto-pipelining. Besides allocations it reports the CPU time per check
// of this process (the gateway's side: the client, its goroutines and the
// settlement loop) and of the redis-server (scripts and socket calls);
// run it with -cpu 1 to match a gateway with GOMAXPROCS=1.
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
	now := time.Now()                                  // the hot path passes the time fasthttp read for the request
	b.SetParallelism(max(64/runtime.GOMAXPROCS(0), 1)) // 64 goroutines: the bench's 64 connections
	b.ReportAllocs()
	srvCPU, ownCPU := srv.CPU(), cputime.Process()
	calls, trips, sent := q.redis.calls.Load(), q.redis.settleTrips.Load(), q.redis.comb.batches.Load()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var r Request
		for pb.Next() {
			if !r.Begin(p, "acme", body, model, now) {
				b.Fatal("refused")
			}
			r.Finish("openai", true, Usage{Input: 10, Output: 20, Known: true}, now)
		}
	})
	// Wait for the settlements queued by the last checks, so their cost
	// is counted too.
	for end := time.Now().Add(5 * time.Second); q.redis.unsent.Load() > 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(q.redis.calls.Load()-calls)/n, "checks/op")
	b.ReportMetric(float64(q.redis.settleTrips.Load()-trips)/n, "settle-trips/op")
	b.ReportMetric(n/float64(q.redis.comb.batches.Load()-sent), "checks/batch")
	b.ReportMetric(float64((cputime.Process()-ownCPU).Microseconds())/n, "client-µs/op")
	b.ReportMetric(float64((srv.CPU()-srvCPU).Microseconds())/n, "server-µs/op")
}
