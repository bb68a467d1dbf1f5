//go:build !race

package decisions

import (
	"testing"
	"time"
)

// Add is on every request's path: it allocates nothing.
func TestRingAddAllocs(t *testing.T) {
	var r Ring
	e := entry(1)
	now := time.Now()
	if n := testing.AllocsPerRun(1000, func() { r.Add(e, now) }); n != 0 {
		t.Errorf("Add allocates %.1f times; want 0", n)
	}
}
