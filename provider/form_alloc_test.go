//go:build !race

package provider

import (
	"testing"

	"github.com/switchyard/switchyard/router"
)

func TestPickAllocatesNothing(t *testing.T) {
	ep := &Endpoint{}
	m := []byte("google/gemini-2.5-flash")
	for _, p := range All() {
		if n := testing.AllocsPerRun(100, func() {
			Pick(p.Adapter, ep, router.SurfaceMessages, false, m)
			Pick(p.Adapter, ep, router.SurfaceMessages, true, m)
			Pick(p.Adapter, ep, router.SurfaceChat, false, m)
		}); n != 0 {
			t.Errorf("%s: Pick allocates %v times", p.Name, n)
		}
	}
}
