//go:build linux && !race

package upstream

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/deadline"
)

// The reuse check of a pooled TCP connection (a peek through
// RawConn.Control) allocates nothing, so a reused connection's request
// stays allocation-free.
func TestTrackedConnCheckAllocsZero(t *testing.T) {
	c, _ := tcpPair(t)
	tc := newTrackedConn(c, &connStats{})
	now := deadline.Mono()
	if allocs := testing.AllocsPerRun(1000, func() {
		if tc.stale(now) != discardNone {
			t.Fatal("a healthy connection found stale")
		}
	}); allocs != 0 {
		t.Fatalf("the reuse check allocates %v per run", allocs)
	}
}

// A pooled connection's deadlines, re-armed for every request, allocate
// nothing either, armed or left as they are.
func TestTrackedConnDeadlineAllocsZero(t *testing.T) {
	c, _ := tcpPair(t)
	tc := newTrackedConn(c, &connStats{})
	i := 0
	if allocs := testing.AllocsPerRun(1000, func() {
		i++
		tc.SetWriteDeadline(time.Now().Add(time.Minute))                       //nolint:errcheck
		tc.SetReadDeadline(time.Now().Add(time.Duration(i%2+1) * time.Minute)) //nolint:errcheck // armed each time
	}); allocs != 0 {
		t.Fatalf("setting deadlines allocates %v per run", allocs)
	}
}
