package upstream

import (
	"reflect"
	"testing"

	"github.com/switchyard/switchyard/provider"
)

// TestAdaptersRegistered: every provider of the registry has an adapter,
// no adapter lacks a provider, and each adapter serves exactly the surfaces
// the registry (and so routing) says it does.
func TestAdaptersRegistered(t *testing.T) {
	if len(adapters) != len(provider.All()) {
		t.Errorf("%d adapters for %d providers", len(adapters), len(provider.All()))
	}
	for _, p := range provider.All() {
		a := adapters[p.Name]
		if a == nil {
			t.Errorf("%s: no adapter", p.Name)
			continue
		}
		if a.Surfaces() != p.Surfaces {
			t.Errorf("%s: adapter serves %b, registry says %b", p.Name, a.Surfaces(), p.Surfaces)
		}
		if got, err := adapterFor(p.Name); err != nil || reflect.TypeOf(got) != reflect.TypeOf(a) {
			t.Errorf("adapterFor(%s) = %v, %v", p.Name, got, err)
		}
	}
}
