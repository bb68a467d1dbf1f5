package audit

import (
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/internal/cputime"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// BenchmarkLogAdd is the writer's throughput: b.N lines added from
// parallel goroutines and written (formatted, hashed, written to the
// file); ns/op is the cost of one line, the writer's included.
func BenchmarkLogAdd(b *testing.B) {
	priv, _, _ := GenerateKey()
	key, _ := ParsePrivateKey(priv)
	l, err := Open(Options{Path: filepath.Join(b.TempDir(), "audit.jsonl"), Key: key, Replica: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	e := &telemetry.Entry{RequestID: []byte("0123456789abcdef0123456789abcdef"), Key: "globex-eu", Surface: router.SurfaceChat,
		Model: []byte("gpt-4o-mini"), Rule: 3, Walked: []string{"eu"}, Status: 200,
		Steps: []telemetry.Step{{Target: euTarget, Class: upstream.ClassOK}}}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Add(e, "3b7e9a0c4f2d")
		}
	})
	l.Sync()
	b.StopTimer()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLogTurn is the gateway's pattern at the highest rate make bench
// reaches: about FlushEvery's worth of lines (400 at 20,000 requests a
// second) added, then written by one turn of the writer (Sync). cpu-ns/line
// is the process's CPU per line, both sides (on a busy machine ns/op counts
// waiting for a core too); allocs/op must stay 0.
func BenchmarkLogTurn(b *testing.B) {
	priv, _, _ := GenerateKey()
	key, _ := ParsePrivateKey(priv)
	l, err := Open(Options{Path: filepath.Join(b.TempDir(), "audit.jsonl"), Key: key, Replica: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	e := &telemetry.Entry{RequestID: []byte("0123456789abcdef0123456789abcdef"), Key: "globex-eu", Surface: router.SurfaceChat,
		Model: []byte("gpt-4o-mini"), Rule: 3, Walked: []string{"eu"}, Status: 200,
		Steps: []telemetry.Step{{Target: euTarget, Class: upstream.ClassOK}}}
	const batch = 400
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		l.Add(e, "3b7e9a0c4f2d")
		if i%batch == batch-1 {
			l.Sync()
		}
	}
	l.Sync()
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/line")
	b.StopTimer()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}
