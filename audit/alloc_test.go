//go:build !race

package audit

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// TestAddAllocatesNothing: the request's side of the audit log, a copy of
// a few fields into the batch, allocates nothing once the batch's arrays
// have grown to the size of a turn (docs/residency.md, Cost).
func TestAddAllocatesNothing(t *testing.T) {
	l, e := allocLog(t)
	e.Walked = []string{"eu", "us"}
	e.Steps = []telemetry.Step{{Target: euTarget, Class: upstream.ClassServer}, {Target: euTarget, Class: upstream.ClassOK}}
	// Both batches the writer alternates between have room for more than
	// runs+1 lines (four turns, in case its ticker splits one).
	const runs = 200
	for range 4 {
		for range 2000 {
			l.Add(e, "abc123")
		}
		l.Sync()
	}
	if n := testing.AllocsPerRun(runs, func() { l.Add(e, "abc123") }); n != 0 {
		t.Fatalf("Add: %v allocations; want 0", n)
	}
}

// TestWriterTurnAllocatesNothing: a turn of the writer (taking the batch,
// formatting, hashing and writing its lines) allocates nothing; the one
// allocation per run is Sync's own channel.
func TestWriterTurnAllocatesNothing(t *testing.T) {
	l, e := allocLog(t)
	turn := func() {
		for range 100 {
			l.Add(e, "abc123")
		}
		l.Sync()
	}
	turn()
	turn()
	if n := testing.AllocsPerRun(50, turn); n > 1 {
		t.Fatalf("100 lines and a writer's turn: %v allocations; want 1 (Sync's channel)", n)
	}
}

// TestBatchGrowsByDoubling: lines beyond any earlier batch's size cost
// allocations only as the batch's arrays double, not per line (a burst,
// or a writer the machine's load delayed, keeps the request side cheap).
func TestBatchGrowsByDoubling(t *testing.T) {
	l, e := allocLog(t)
	const lines = 4000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range lines {
		l.Add(e, "abc123")
	}
	runtime.ReadMemStats(&after)
	if n := after.Mallocs - before.Mallocs; n > 200 {
		t.Fatalf("%d new lines: %d allocations; want a few per doubling of the batch", lines, n)
	}
}

// allocLog opens a log in a temporary directory, closed when the test
// ends, and returns it with an entry of a request that one EU member
// answered.
func allocLog(t *testing.T) (*Log, *telemetry.Entry) {
	t.Helper()
	priv, _ := testKey(t)
	l, err := Open(Options{Path: filepath.Join(t.TempDir(), "audit.jsonl"), Key: priv, Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, &telemetry.Entry{RequestID: []byte("0123456789abcdef0123456789abcdef0123"), Key: "globex-eu", Surface: router.SurfaceChat,
		Model: []byte("gpt-4o-mini"), Rule: 3, Walked: []string{"eu"}, Status: 200,
		Steps: []telemetry.Step{{Target: euTarget, Class: upstream.ClassOK}}}
}
