//go:build linux && !race

package upstream

import "testing"

// The reuse check of a pooled TCP connection (a peek through
// RawConn.Control) allocates nothing, so a reused connection's request
// stays allocation-free.
func TestTrackedConnCheckAllocsZero(t *testing.T) {
	c, _ := tcpPair(t)
	tc := newTrackedConn(c, &connStats{})
	now := nanotime()
	if allocs := testing.AllocsPerRun(1000, func() {
		if tc.stale(now) != discardNone {
			t.Fatal("a healthy connection found stale")
		}
	}); allocs != 0 {
		t.Fatalf("the reuse check allocates %v per run", allocs)
	}
}
