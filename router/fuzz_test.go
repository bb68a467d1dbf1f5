package router

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The differential tests: the compiled Snapshot must agree with the linear
// reference (linear_test.go) on every rule set and request.

// diffCheck compiles rules and targets and compares Match, ServesModel,
// ServesSurface and Models with the linear reference for every request.
func diffCheck(t *testing.T, rules []RuleSpec, targets []TargetSpec, reqs []Request) {
	t.Helper()
	s, err := Compile(rules, targets, 1)
	if err != nil {
		t.Fatalf("Compile(%v, %v): %v", rules, targets, err)
	}
	for i := range reqs {
		r := &reqs[i]
		gotRule, gotChain := s.Match(r)
		wantRule, wantChain := linearMatch(rules, r)
		if gotRule != wantRule || !slices.Equal(gotChain, wantChain) {
			t.Fatalf("Match(%s) = %d %v, linear = %d %v\nrules: %s",
				fmtReq(r), gotRule, gotChain, wantRule, wantChain, fmtRules(rules))
		}
		for ti := range targets {
			if got, want := s.ServesModel(ti, r.Model), linearServes(targets[ti].Models, string(r.Model)); got != want {
				t.Fatalf("ServesModel(%d %q, %q) = %v, want %v", ti, targets[ti].Models, r.Model, got, want)
			}
			if got, want := s.ServesSurface(ti, r.Surface), r.Surface < NumSurfaces && targets[ti].Surfaces.Has(r.Surface); got != want {
				t.Fatalf("ServesSurface(%d, %v) = %v, want %v", ti, r.Surface, got, want)
			}
		}
	}
	want := linearModels(rules, targets)
	slices.SortFunc(want, func(a, b ModelInfo) int { return cmp.Compare(a.ID, b.ID) })
	if got := s.Models(); got == nil || !slices.Equal(got, want) {
		t.Fatalf("Models() = %#v, linear = %#v\nrules: %s\ntargets: %+v", got, want, fmtRules(rules), targets)
	}
}

func fmtReq(r *Request) string {
	s := fmt.Sprintf("{%v model=%q", r.Surface, r.Model)
	if r.HasUser {
		s += fmt.Sprintf(" user=%q", r.User)
	}
	s += fmt.Sprintf(" stream=%v tools=%v", r.Stream, r.HasTools)
	for _, p := range r.Metadata {
		s += fmt.Sprintf(" %s=%q", p.Key, p.Value)
	}
	return s + "}"
}

func fmtRules(rules []RuleSpec) string {
	s := ""
	for i, r := range rules {
		s += fmt.Sprintf("\n  [%d] %s -> %v", i, describeRule(r), r.Chain)
	}
	return s
}

// TestMatchAgreesWithLinearRandom runs a few thousand random rule sets with
// a fixed seed, so a failure reproduces.
func TestMatchAgreesWithLinearRandom(t *testing.T) {
	c := randChooser{rand.New(rand.NewPCG(20261130, 1))}
	sets := 3000
	if testing.Short() {
		sets = 300
	}
	for range sets {
		targets := genTargets(c, 4)
		rules := genRules(c, 24, len(targets))
		reqs := make([]Request, 30)
		for i := range reqs {
			reqs[i] = genRequest(c)
		}
		diffCheck(t, rules, targets, reqs)
	}
}

// TestMatchAgreesWithLinearLarge checks one big rule set, where the trie is
// deep and wide and the maps hold many keys.
func TestMatchAgreesWithLinearLarge(t *testing.T) {
	c := randChooser{rand.New(rand.NewPCG(7, 7))}
	targets := genTargets(c, 6)
	var rules []RuleSpec
	for len(rules) < 2000 {
		rules = append(rules, genRules(c, 50, len(targets))...)
	}
	reqs := make([]Request, 3000)
	for i := range reqs {
		reqs[i] = genRequest(c)
	}
	diffCheck(t, rules, targets, reqs)
}

// FuzzMatch decodes a rule set, targets and requests from the fuzzer's
// bytes and compares with the linear reference. `go test` runs the seeds;
// `go test -fuzz=FuzzMatch ./router` explores.
func FuzzMatch(f *testing.F) {
	seeds := rand.New(rand.NewPCG(1, 2))
	for n := range 40 {
		b := make([]byte, 64+n*16)
		for i := range b {
			b[i] = byte(seeds.IntN(256))
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &byteChooser{data}
		targets := genTargets(c, 4)
		rules := genRules(c, 16, len(targets))
		var reqs []Request
		for len(c.b) > 0 && len(reqs) < 64 {
			reqs = append(reqs, genRequest(c))
		}
		reqs = append(reqs, genRequest(c))
		diffCheck(t, rules, targets, reqs)
	})
}
