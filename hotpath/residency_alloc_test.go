//go:build !race

package hotpath

import (
	"testing"

	"github.com/switchyard/switchyard/upstream"
)

func TestFenceAdmitsAlloc(t *testing.T) {
	allowed := make([]bool, 200)
	allowed[150] = true
	f := upstream.NewFence(allowed)
	ok := false
	if n := testing.AllocsPerRun(1000, func() { ok = f.Admits(150) && !f.Admits(3) }); n != 0 || !ok {
		t.Fatalf("Admits: %v allocations, ok %v; want 0, true", n, ok)
	}
}
