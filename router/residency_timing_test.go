package router

import (
	"fmt"
	"testing"
)

// BenchmarkCheckResidency: a multi-tenant config of 1,000 user-pinned
// tenants (each its own rule and key with residency) behind 1,000 model
// rules, the shape a residency deployment has.
func BenchmarkCheckResidency(b *testing.B) {
	targets := []TargetSpec{{Name: "us", Surfaces: AllSurfaces, Residency: "us"}, {Name: "eu", Surfaces: AllSurfaces, Residency: "eu"}}
	var rules []RuleSpec
	var keys []KeySpec
	for i := range 1000 {
		rules = append(rules, RuleSpec{Key: KeyUser, Value: fmt.Sprintf("tenant-%d", i), Chain: []int{1}})
		keys = append(keys, KeySpec{Name: fmt.Sprintf("k%d", i), User: []byte(fmt.Sprintf("tenant-%d", i)), HasUser: true, Residency: []string{"eu"}})
	}
	for i := range 1000 {
		rules = append(rules, RuleSpec{Key: KeyModel, Value: fmt.Sprintf("model-%d", i), Chain: []int{0}})
	}
	b.ReportAllocs()
	for b.Loop() {
		esc, err := CheckResidency(rules, targets, keys)
		if err != nil || len(esc) != 0 {
			b.Fatal(err, len(esc))
		}
	}
}
