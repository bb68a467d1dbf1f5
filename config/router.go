package config

import (
	"fmt"
	"maps"
	"slices"

	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/router"
)

// ProviderSurfaces returns the surfaces a provider can serve, from the
// provider registry (docs/providers.md). An unknown provider serves none.
func ProviderSurfaces(name string) router.SurfaceSet {
	if p := provider.Lookup(name); p != nil {
		return p.Surfaces
	}
	return 0
}

// Surfaces returns the surfaces target t serves: its provider's, less
// responses for an azure target on classic deployment URLs when responses
// has no translator (only the v1 API has the Responses API natively).
func (t *Target) Surfaces() router.SurfaceSet {
	s := ProviderSurfaces(t.Provider)
	if t.Provider == ProviderAzure && t.AzureAPIVersion != "" && !provider.TranslatedSurfaces().Has(router.SurfaceResponses) {
		s &^= 1 << router.SurfaceResponses
	}
	return s
}

var routerKeys = map[string]router.Key{
	KeyModel:       router.KeyModel,
	KeyModelPrefix: router.KeyModelPrefix,
	KeyUser:        router.KeyUser,
	KeyStream:      router.KeyStream,
	KeyHasTools:    router.KeyHasTools,
	KeyMetadata:    router.KeyMetadata,
}

// RouterSpecs converts a loaded config into router.Compile's inputs: one
// RuleSpec per condition, in declared order, with its chain as indexes into
// the targets, and one TargetSpec per target, in declared order. The
// returned slices are fresh copies. c must come from Parse or Load (a
// validated config); a condition naming an undeclared target is a broken
// invariant and panics with a BUG: message.
func (c *Config) RouterSpecs() ([]router.RuleSpec, []router.TargetSpec) {
	byName := make(map[string]int, len(c.Targets))
	targets := make([]router.TargetSpec, len(c.Targets))
	for i, t := range c.Targets {
		byName[t.VirtualKey] = i
		targets[i] = router.TargetSpec{
			Name:      t.VirtualKey,
			Provider:  t.Provider,
			Surfaces:  t.Surfaces(),
			Batch:     t.BatchSurfaces(),
			Models:    slices.Clone(t.Models), // nil stays nil: any model
			Residency: t.Residency,
		}
		if len(t.ModelMap) > 0 {
			// Sorted: map order must not leak into the specs.
			targets[i].MappedModels = slices.Sorted(maps.Keys(t.ModelMap))
		}
	}
	rules := make([]router.RuleSpec, len(c.Strategy.Conditions))
	for i := range c.Strategy.Conditions {
		cond := &c.Strategy.Conditions[i]
		key, ok := routerKeys[cond.Key]
		if !ok {
			panic(fmt.Sprintf("BUG: config: RouterSpecs on an unvalidated config: condition %d has key %q", i, cond.Key))
		}
		names := cond.Chain()
		chain := make([]int, len(names))
		for j, name := range names {
			idx, ok := byName[name]
			if !ok {
				panic(fmt.Sprintf("BUG: config: RouterSpecs on an unvalidated config: condition %d names unknown target %q", i, name))
			}
			chain[j] = idx
		}
		rules[i] = router.RuleSpec{Key: key, Field: cond.Field, Value: cond.Value, Chain: chain}
	}
	return rules, targets
}
