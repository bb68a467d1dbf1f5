package admin

import (
	"testing"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/decisions"
)

// BenchmarkRecorderFinished is the console's cost per request: a request
// that failed over from one target to another (two calls), recorded into
// the decision ring, the key's counters and three histories. Its baseline
// twins are the same recorder keeping no history, and the decision ring
// alone.
func BenchmarkRecorderFinished(b *testing.B) {
	s, g := newTestServer(b, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	rec := s.opts.Recorder
	rec.SetTargets([]string{"a", "b"})
	e := failoverEntry(g.Load().Targets)
	b.Run("recorder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rec.Finished(e)
		}
	})
	b.Run("recorder_parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rec.Finished(e)
			}
		})
	})
	// The same recorder without histories: what recording them adds.
	b.Run("baseline_no_histories", func(b *testing.B) {
		bare := NewRecorder([]string{"acme"})
		for _, c := range *bare.keys.Load() {
			c.history = nil
		}
		b.ReportAllocs()
		for b.Loop() {
			bare.Finished(e)
		}
	})
	b.Run("baseline_ring_only", func(b *testing.B) {
		var ring decisions.Ring
		now := rec.clock()
		b.ReportAllocs()
		for b.Loop() {
			ring.Add(e, now)
		}
	})
}
