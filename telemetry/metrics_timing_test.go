package telemetry

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// BenchmarkMetricsRequestPath measures what one proxied request costs in
// metrics: one attempt (counter + histogram) and one request counter.
// Reproduce: go test -run '^$' -bench MetricsRequestPath -benchtime=200ms ./telemetry
func BenchmarkMetricsRequestPath(b *testing.B) {
	p := upstream.NewPool()
	tg, err := p.Target(&testTargetConfig)
	if err != nil {
		b.Fatal(err)
	}
	m := quietMetrics()
	m.SetTargets([]*upstream.Target{tg})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Attempt(tg, upstream.ClassOK, 200, 150*time.Millisecond)
			m.Request(router.SurfaceChat, 200)
		}
	})
}
