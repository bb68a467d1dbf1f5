package audit

import (
	"path/filepath"
	"testing"

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
