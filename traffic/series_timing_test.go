package traffic

import (
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRecord is the request path's cost per series: one request into
// the current second.
func BenchmarkRecord(b *testing.B) {
	s := New(time.Unix(1, 0))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Record(1+int64(i>>20), 30*time.Millisecond, i&63 == 0, 120)
	}
}

// BenchmarkRecordParallel records from every core into the same series
// and second: the contended case of one busy target.
func BenchmarkRecordParallel(b *testing.B) {
	s := New(time.Unix(1, 0))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s.Record(1, time.Duration(i&1023)*time.Millisecond, false, 120)
			i++
		}
	})
}

// BenchmarkBaselineAtomicAdd is one atomic add per request: the floor
// Record's four adds compare with.
func BenchmarkBaselineAtomicAdd(b *testing.B) {
	var n atomic.Uint64
	for b.Loop() {
		n.Add(1)
	}
}

// BenchmarkRead is the console's cost per series and answer: 15 minutes
// in 10-second spans, each second's histogram summed once.
func BenchmarkRead(b *testing.B) {
	s := New(time.Unix(1000, 0))
	for sec := int64(1000); sec < 2000; sec++ {
		for i := range 20 {
			s.Record(sec, time.Duration(i*37)*time.Millisecond, i == 0, 50)
		}
	}
	f := NewFrame(2000, MaxWindow, 10)
	out := make([]Span, f.N)
	b.ReportAllocs()
	for b.Loop() {
		s.Read(f, out)
		var all Span
		for i := range out {
			all.Add(&out[i])
			out[i].Latency.Quantile(0.5)
			out[i].Latency.Quantile(0.99)
		}
		all.Latency.Quantile(0.99)
	}
}
