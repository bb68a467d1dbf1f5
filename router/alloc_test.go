//go:build !race

package router

import "testing"

// Match and ServesModel run on every request: they must not allocate.

func TestMatchAllocatesNothing(t *testing.T) {
	rules, targets := benchRules(10000)
	s, err := Compile(rules, targets, 0)
	if err != nil {
		t.Fatal(err)
	}
	reqs := benchRequests(rules)
	matched := 0
	for i := range reqs {
		r := &reqs[i]
		if rule, _ := s.Match(r); rule >= 0 {
			matched++
		}
		if a := testing.AllocsPerRun(100, func() { s.Match(r) }); a != 0 {
			t.Errorf("Match(%s) allocates %v times per call", fmtReq(r), a)
		}
	}
	// The requests must exercise the lookups, not just the fallback.
	if matched < 8 {
		t.Fatalf("only %d of %d benchmark requests matched a rule", matched, len(reqs))
	}
}

func TestServesModelAllocatesNothing(t *testing.T) {
	_, targets := benchRules(10)
	s, err := Compile(nil, targets, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"claude-3-haiku", "claude-9", "llama3-70b", "qwen2.5", "gpt-4o", ""} {
		model := []byte(m)
		for ti := range targets {
			if a := testing.AllocsPerRun(100, func() { s.ServesModel(ti, model) }); a != 0 {
				t.Errorf("ServesModel(%d, %q) allocates %v times per call", ti, m, a)
			}
		}
	}
}
