package tenancy

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// bigKeyObjects is how many records the big key of the cost tests holds.
const bigKeyObjects = 20_000

// fillBig records n files for key "big" and 5 for key "small".
func fillBig(tb testing.TB, m *MemoryObjects, n int) {
	ctx := context.Background()
	for i := range n {
		if err := m.Put(ctx, Object{Kind: KindFile, ID: fmt.Sprintf("file-big-%d", i), Key: "big", Target: "oai", Created: int64(i)}, time.Hour); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range 5 {
		if err := m.Put(ctx, Object{Kind: KindFile, ID: fmt.Sprintf("file-small-%d", i), Key: "small", Target: "oai", Created: int64(i)}, time.Hour); err != nil {
			tb.Fatal(err)
		}
	}
}

// cheapest runs f rounds times, five times over, and returns the fastest
// run: the figure least disturbed by a loaded machine.
func cheapest(rounds int, f func(i int)) time.Duration {
	best := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		for i := range rounds {
			f(i)
		}
		best = min(best, time.Since(start))
	}
	return max(best, time.Microsecond)
}

// TestMemoryObjectsBigKeyCostsItsOwn: a key holding 20,000 records makes
// none of the memory store's calls dearer for itself than for a key
// holding five, beyond a constant: a lookup (Get, Owners, Flag) is a map
// access, a write a binary search, a list page a cursor search and the
// page's copy. The store once scanned the key's whole table on every call
// (pruning expired records, finding the oldest), under the mutex every
// key shares. It compares the two keys' costs, a ratio (about 1 here, in
// the thousands with a scan), never a wall-clock time.
func TestMemoryObjectsBigKeyCostsItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a store with 20,000 records")
	}
	m := NewMemoryObjects(0, nil)
	fillBig(t, m, bigKeyObjects)
	ctx := context.Background()
	owners := make([]string, 1)
	ops := []struct {
		name string
		f    func(key string, i int)
	}{
		{"Get", func(key string, i int) { m.Get(ctx, key, KindFile, fmt.Sprintf("file-%s-%d", key, i%5)) }},
		{"Owners", func(key string, i int) { m.Owners(ctx, KindFile, []string{"file-" + key + "-3"}, owners) }},
		{"Flag", func(key string, i int) { m.Flag(ctx, key, KindFile, "file-"+key+"-2", FlagCharged) }},
		{"List", func(key string, i int) { m.List(ctx, key, KindFile, Page{Limit: 2, After: "file-" + key + "-4"}) }},
		{"Count", func(key string, i int) { m.Count(ctx, key) }},
		{"Put", func(key string, i int) {
			m.Put(ctx, Object{Kind: KindFile, ID: "file-" + key + "-new", Key: key, Target: "oai", Created: 1 << 40}, time.Hour)
		}},
	}
	for _, op := range ops {
		big := cheapest(300, func(i int) { op.f("big", i) })
		small := cheapest(300, func(i int) { op.f("small", i) })
		if ratio := float64(big) / float64(small); ratio > 30 {
			t.Errorf("%s on a key with %d records costs %.0f× what it costs on a key with 5 (%v vs %v per 300 calls); want about the same",
				op.name, bigKeyObjects, ratio, big, small)
		}
	}
}
