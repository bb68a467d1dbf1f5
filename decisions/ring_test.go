package decisions

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

func entry(i int) *telemetry.Entry {
	return &telemetry.Entry{
		RequestID: []byte(fmt.Sprintf("req-%d", i)),
		Surface:   router.SurfaceChat,
		Model:     []byte("gpt-4o"),
		Rule:      i % 3,
		Walked:    []string{"primary", "backup"},
		Target:    "backup",
		Attempts:  2,
		Status:    200,
		Latency:   1500 * time.Microsecond,
		Class:     upstream.ClassOK,
		Key:       "acme",
		Usage:     upstream.Usage{Prompt: 12, Completion: 34, HasPrompt: true, HasCompletion: true},
	}
}

// A decision reads back as it was added; request bytes are copies, names
// the configuration's strings; fields over their bounds are truncated.
func TestRingRoundTrip(t *testing.T) {
	var r Ring
	e := entry(7)
	e.Rule = telemetry.RuleNotRouted
	e.Stream = true
	e.Usage.HasCompletion = false
	at := time.Date(2026, 12, 2, 9, 30, 0, 123, time.UTC)
	r.Add(e, at)
	e.RequestID[0] = 'X' // the caller reuses its buffers
	ds, next := r.After(0, 0)
	if len(ds) != 1 || next != 1 {
		t.Fatalf("After(0) = %d decisions, next %d; want 1, 1", len(ds), next)
	}
	want := Decision{Seq: 1, Time: at, RequestID: "req-7", Key: "acme", Surface: "chat", Model: "gpt-4o",
		Rule: -2, Tried: []string{"primary", "backup"}, TriedTotal: 2, Target: "backup", Attempts: 2, Status: 200,
		Outcome: "ok", Stream: true, LatencyMs: 1.5, PromptTokens: 12, CompletionTokens: -1}
	if got := ds[0]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("decision\n got %+v\nwant %+v", got, want)
	}

	long := entry(1)
	long.Model = []byte(strings.Repeat("m", 200))
	long.RequestID = []byte(strings.Repeat("r", 100))
	long.Walked = strings.Split("a b c d e f g h i j", " ")
	long.Rule = -1
	r.Add(long, at)
	ds, _ = r.After(1, 0)
	d := ds[0]
	if d.Model != strings.Repeat("m", MaxModelBytes) || d.RequestID != strings.Repeat("r", MaxRequestIDBytes) ||
		len(d.Tried) != MaxWalked || d.TriedTotal != 10 || d.Rule != -1 {
		t.Errorf("long decision not truncated as documented: %+v", d)
	}
}

// After pages through the ring: it returns what follows after, at most
// max, keeps only the newest Size, and says where to go on.
func TestRingAfter(t *testing.T) {
	var r Ring
	if ds, next := r.After(0, 0); ds != nil || next != 0 {
		t.Fatalf("empty ring: %v %d", ds, next)
	}
	for i := 1; i <= Size+50; i++ {
		r.Add(entry(i), time.Now())
	}
	ds, next := r.After(0, 0)
	if len(ds) != Size || ds[0].Seq != 51 || next != Size+50 {
		t.Fatalf("After(0): %d decisions from %d, next %d; want %d from 51, next %d", len(ds), ds[0].Seq, next, Size, Size+50)
	}
	for i, d := range ds {
		if d.RequestID != fmt.Sprintf("req-%d", d.Seq) || (i > 0 && d.Seq != ds[i-1].Seq+1) {
			t.Fatalf("decision %d: %+v", i, d)
		}
	}
	if ds, next = r.After(Size+40, 0); len(ds) != 10 || next != Size+50 {
		t.Errorf("After(head-10): %d, next %d", len(ds), next)
	}
	if ds, _ = r.After(0, 200); len(ds) != 200 || ds[199].Seq != Size+50 {
		t.Errorf("After(0, 200): %d ending at %d; want the newest 200", len(ds), ds[len(ds)-1].Seq)
	}
	if ds, next = r.After(Size+50, 0); ds != nil || next != Size+50 {
		t.Errorf("After(head): %v %d", ds, next)
	}
}

// A slot whose writer has not finished stops the reader there; a dropped
// decision is skipped.
func TestRingGaps(t *testing.T) {
	var r Ring
	r.Add(entry(1), time.Now())
	r.head.Add(1) // seq 2 handed out, not written yet
	r.Add(entry(3), time.Now())
	ds, next := r.After(0, 0)
	if len(ds) != 1 || next != 1 {
		t.Fatalf("with seq 2 pending: %d decisions, next %d; want 1, 1", len(ds), next)
	}
	r.slots[2].lost.Store(2) // seq 2's writer dropped it
	ds, next = r.After(next, 0)
	if len(ds) != 1 || ds[0].Seq != 3 || next != 3 {
		t.Fatalf("after the drop: %+v next %d; want seq 3", ds, next)
	}
	// A writer that finds its slot busy drops its decision and says so.
	r.slots[4%Size].seq.Store(busy)
	r.Add(entry(4), time.Now())
	if r.Dropped() != 1 || r.slots[4].lost.Load() != 4 {
		t.Errorf("dropped %d, lost %d; want 1, 4", r.Dropped(), r.slots[4].lost.Load())
	}
}

// Concurrent writers and readers: every decision a reader gets is whole
// (its fields belong to one request), and in order. Run with -race.
func TestRingConcurrent(t *testing.T) {
	var r Ring
	const writers, each = 4, 2000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := w*each + i
				e := entry(n)
				e.Status = 200 + n%300
				e.Model = []byte(fmt.Sprintf("model-%d", n))
				r.Add(e, time.Now())
			}
		}()
	}
	done := make(chan struct{})
	var seen int
	go func() {
		defer close(done)
		var next uint64
		for range 100000 {
			ds, n := r.After(next, 0)
			for i, d := range ds {
				var id int
				fmt.Sscanf(d.RequestID, "req-%d", &id)
				if d.Model != fmt.Sprintf("model-%d", id) || d.Status != 200+id%300 {
					t.Errorf("torn decision: %+v", d)
					return
				}
				if i > 0 && d.Seq <= ds[i-1].Seq {
					t.Errorf("out of order: %d after %d", d.Seq, ds[i-1].Seq)
				}
			}
			seen += len(ds)
			next = n
			if next == writers*each {
				return
			}
		}
	}()
	wg.Wait()
	<-done
	if seen == 0 {
		t.Error("the reader saw nothing")
	}
}
