package router

import (
	"slices"
	"strings"
	"testing"
)

// threeTargets is a small target set: openai (any model, every surface),
// anthropic (claude-*, chat) and bedrock (two exact ids, chat).
func threeTargets() []TargetSpec {
	return []TargetSpec{
		{Name: "openai", Provider: "openai", Surfaces: AllSurfaces},
		{Name: "anthropic", Provider: "anthropic", Surfaces: 1 << SurfaceChat, Models: []string{"claude-*"}},
		{Name: "bedrock", Provider: "bedrock", Surfaces: 1 << SurfaceChat, Models: []string{"claude-3-haiku", "llama3"}},
	}
}

func mustCompile(t *testing.T, rules []RuleSpec, targets []TargetSpec) *Snapshot {
	t.Helper()
	s, err := Compile(rules, targets, 42)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return s
}

func md(kv ...string) []Pair {
	var ps []Pair
	for i := 0; i+1 < len(kv); i += 2 {
		ps = append(ps, Pair{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return ps
}

type matchCase struct {
	name  string
	req   Request
	rule  int
	chain []int
}

func runMatchCases(t *testing.T, s *Snapshot, cases []matchCase) {
	t.Helper()
	for _, c := range cases {
		rule, chain := s.Match(&c.req)
		if rule != c.rule || !slices.Equal(chain, c.chain) {
			t.Errorf("%s: Match = %d %v, want %d %v", c.name, rule, chain, c.rule, c.chain)
		}
	}
}

func TestMatchEachKey(t *testing.T) {
	rules := []RuleSpec{
		{Key: KeyModel, Value: "gpt-4o", Chain: []int{0}},
		{Key: KeyModelPrefix, Value: "claude-", Chain: []int{1, 2}},
		{Key: KeyUser, Value: "vip", Chain: []int{2}},
		{Key: KeyStream, Value: "true", Chain: []int{1}},
		{Key: KeyHasTools, Value: "true", Chain: []int{2, 0}},
		{Key: KeyMetadata, Field: "tier", Value: "gold", Chain: []int{0, 1}},
		{Key: KeyMetadata, Field: "n", Value: "1.0", Chain: []int{2}},
	}
	s := mustCompile(t, rules, threeTargets())
	chat := SurfaceChat
	runMatchCases(t, s, []matchCase{
		{"model equal", Request{Surface: chat, Model: []byte("gpt-4o")}, 0, []int{0}},
		{"model not a prefix match", Request{Surface: chat, Model: []byte("gpt-4o-mini")}, -1, []int{0}},
		{"model case-sensitive", Request{Surface: chat, Model: []byte("GPT-4o")}, -1, []int{0}},
		{"prefix", Request{Surface: chat, Model: []byte("claude-3-haiku")}, 1, []int{1, 2}},
		{"prefix itself", Request{Surface: chat, Model: []byte("claude-")}, 1, []int{1, 2}},
		{"prefix too short", Request{Surface: chat, Model: []byte("claude")}, -1, []int{0}},
		{"user", Request{Surface: chat, Model: []byte("x"), User: []byte("vip"), HasUser: true}, 2, []int{2}},
		{"user absent", Request{Surface: chat, Model: []byte("x"), User: []byte("vip")}, -1, []int{0}},
		{"user other", Request{Surface: chat, Model: []byte("x"), User: []byte("vip2"), HasUser: true}, -1, []int{0}},
		{"stream", Request{Surface: chat, Model: []byte("x"), Stream: true}, 3, []int{1}},
		{"tools", Request{Surface: SurfaceCompletions, Model: []byte("x"), HasTools: true}, 4, []int{2, 0}},
		{"metadata", Request{Surface: chat, Model: []byte("x"), Metadata: md("a", "b", "tier", "gold")}, 5, []int{0, 1}},
		{"metadata other field", Request{Surface: chat, Model: []byte("x"), Metadata: md("team", "gold")}, -1, []int{0}},
		{"metadata as written", Request{Surface: chat, Model: []byte("x"), Metadata: md("n", "1")}, -1, []int{0}},
		{"metadata literal", Request{Surface: chat, Model: []byte("x"), Metadata: md("n", "1.0")}, 6, []int{2}},
		{"nothing", Request{Surface: chat, Model: []byte("x")}, -1, []int{0}},
	})
}

func TestMatchFirstWinsAcrossKinds(t *testing.T) {
	rules := []RuleSpec{
		{Key: KeyUser, Value: "vip", Chain: []int{2}},
		{Key: KeyModel, Value: "gpt-4o", Chain: []int{0}},
		{Key: KeyMetadata, Field: "tier", Value: "gold", Chain: []int{1}},
		{Key: KeyModelPrefix, Value: "gpt-", Chain: []int{1}},
		{Key: KeyStream, Value: "false", Chain: []int{1, 2}},
		{Key: KeyModelPrefix, Value: "g", Chain: []int{2, 1}},
		{Key: KeyHasTools, Value: "false", Chain: []int{0, 2}},
	}
	s := mustCompile(t, rules, threeTargets())
	vip := func(model string) Request {
		return Request{Surface: SurfaceChat, Model: []byte(model), User: []byte("vip"), HasUser: true}
	}
	runMatchCases(t, s, []matchCase{
		{"user rule 0 beats model rule 1", vip("gpt-4o"), 0, []int{2}},
		{"model rule 1 beats metadata rule 2", Request{Surface: SurfaceChat, Model: []byte("gpt-4o"), Metadata: md("tier", "gold")}, 1, []int{0}},
		{"metadata rule 2 beats prefix rule 3", Request{Surface: SurfaceChat, Model: []byte("gpt-5"), Metadata: md("tier", "gold")}, 2, []int{1}},
		{"shorter prefix later loses", Request{Surface: SurfaceChat, Model: []byte("gpt-5")}, 3, []int{1}},
		{"stream false rule 4 beats prefix rule 5", Request{Surface: SurfaceChat, Model: []byte("gemini")}, 4, []int{1, 2}},
		{"on embeddings stream is skipped", Request{Surface: SurfaceEmbeddings, Model: []byte("gemini")}, 5, []int{2, 1}},
		{"stream true falls to tools false", Request{Surface: SurfaceChat, Model: []byte("x"), Stream: true}, 6, []int{0, 2}},
		{"nothing on images", Request{Surface: SurfaceImages, Model: []byte("x"), Stream: true}, -1, []int{0}},
	})
}

func TestMatchPrefixLowestAmongNested(t *testing.T) {
	// A longer prefix declared first wins over a shorter one declared later,
	// and a shorter one declared first wins over a longer one.
	rules := []RuleSpec{
		{Key: KeyModelPrefix, Value: "claude-3-", Chain: []int{1}},
		{Key: KeyModelPrefix, Value: "claude-", Chain: []int{2}},
		{Key: KeyModelPrefix, Value: "l", Chain: []int{0}},
		{Key: KeyModelPrefix, Value: "llama3-70b", Chain: []int{1}},
	}
	s := mustCompile(t, rules, threeTargets())
	runMatchCases(t, s, []matchCase{
		{"longer first", Request{Model: []byte("claude-3-opus")}, 0, []int{1}},
		{"only shorter", Request{Model: []byte("claude-2")}, 1, []int{2}},
		{"shorter first", Request{Model: []byte("llama3-70b-instruct")}, 2, []int{0}},
		{"empty model", Request{Model: nil}, -1, []int{0}},
	})
}

func TestMatchSurfaceGating(t *testing.T) {
	rules := []RuleSpec{
		{Key: KeyStream, Value: "false", Chain: []int{1}},
		{Key: KeyHasTools, Value: "false", Chain: []int{2}},
		{Key: KeyMetadata, Field: "tier", Value: "gold", Chain: []int{2}},
		{Key: KeyModel, Value: "m", Chain: []int{0, 1}},
	}
	s := mustCompile(t, rules, threeTargets())
	for _, x := range []Surface{SurfaceEmbeddings, SurfaceImages, NumSurfaces} {
		r := Request{Surface: x, Model: []byte("m"), Metadata: md("tier", "gold")}
		if rule, chain := s.Match(&r); rule != 3 || !slices.Equal(chain, []int{0, 1}) {
			t.Errorf("%v: Match = %d %v, want 3 [0 1]: stream/has_tools/metadata must not match", x, rule, chain)
		}
	}
	for _, x := range []Surface{SurfaceChat, SurfaceCompletions} {
		r := Request{Surface: x, Model: []byte("m")}
		if rule, _ := s.Match(&r); rule != 0 {
			t.Errorf("%v: Match = %d, want 0 (stream false)", x, rule)
		}
	}
}

func TestMatchNoRules(t *testing.T) {
	s := mustCompile(t, nil, threeTargets())
	r := Request{Surface: SurfaceChat, Model: []byte("gpt-4o"), User: []byte("u"), HasUser: true, Metadata: md("a", "b")}
	if rule, chain := s.Match(&r); rule != -1 || !slices.Equal(chain, []int{0}) {
		t.Fatalf("Match = %d %v, want -1 [0]", rule, chain)
	}
	if s.NumRules() != 0 || s.NumTargets() != 3 || s.Created() != 42 {
		t.Fatalf("NumRules %d NumTargets %d Created %d", s.NumRules(), s.NumTargets(), s.Created())
	}
}

func TestServesModelPatterns(t *testing.T) {
	targets := []TargetSpec{
		{Name: "any", Surfaces: AllSurfaces},
		{Name: "list", Surfaces: 1 << SurfaceChat, Models: []string{"gpt-4o", "gpt-5*", "o1"}},
		{Name: "none", Models: []string{}},
		{Name: "star", Models: []string{"*"}},
	}
	s := mustCompile(t, nil, targets)
	cases := []struct {
		t     int
		model string
		want  bool
	}{
		{0, "anything", true}, {0, "", true},
		{1, "gpt-4o", true}, {1, "gpt-4o-mini", false}, {1, "gpt-4", false},
		{1, "gpt-5", true}, {1, "gpt-5-mini", true}, {1, "gpt-", false},
		{1, "o1", true}, {1, "o1-pro", false}, {1, "gpt-5*", true},
		{2, "gpt-4o", false}, {2, "", false},
		{3, "x", true}, {3, "", true},
		{-1, "gpt-4o", false}, {4, "gpt-4o", false},
	}
	for _, c := range cases {
		if got := s.ServesModel(c.t, []byte(c.model)); got != c.want {
			t.Errorf("ServesModel(%d, %q) = %v, want %v", c.t, c.model, got, c.want)
		}
	}
	if !s.ServesSurface(1, SurfaceChat) || s.ServesSurface(1, SurfaceEmbeddings) ||
		s.ServesSurface(2, SurfaceChat) || s.ServesSurface(9, SurfaceChat) || s.ServesSurface(0, NumSurfaces) {
		t.Error("ServesSurface disagrees with the targets' surface sets")
	}
}

func TestCompileErrors(t *testing.T) {
	two := threeTargets()[:2]
	cases := []struct {
		name    string
		rules   []RuleSpec
		targets []TargetSpec
		want    string
	}{
		{"no targets", nil, nil, "no targets"},
		{"empty chain", []RuleSpec{{Key: KeyModel, Value: "m"}}, two, "conditions[0]: empty chain"},
		{"chain out of range", []RuleSpec{{Key: KeyModel, Value: "m", Chain: []int{0}}, {Key: KeyUser, Value: "u", Chain: []int{2}}}, two, "conditions[1]: chain[0] = 2 is out of range"},
		{"negative chain", []RuleSpec{{Key: KeyModel, Value: "m", Chain: []int{1, -1}}}, two, "chain[1] = -1 is out of range"},
		{"repeat", []RuleSpec{{Key: KeyModel, Value: "m", Chain: []int{1, 0, 1}}}, two, "repeats target 1"},
		{"bad bool", []RuleSpec{{Key: KeyStream, Value: "yes", Chain: []int{0}}}, two, `stream value "yes"`},
		{"bad key", []RuleSpec{{Key: Key(9), Value: "x", Chain: []int{0}}}, two, "unknown key"},
	}
	for _, c := range cases {
		s, err := Compile(c.rules, c.targets, 0)
		if err == nil || s != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Compile = %v, %v; want error containing %q", c.name, s, err, c.want)
		}
	}
}

func TestCompileCopiesInput(t *testing.T) {
	rules := []RuleSpec{{Key: KeyModel, Value: "m", Chain: []int{1}}}
	targets := threeTargets()
	s := mustCompile(t, rules, targets)
	rules[0].Chain[0] = 2
	targets[1].Models[0] = "x*"
	if _, chain := s.Match(&Request{Model: []byte("m")}); !slices.Equal(chain, []int{1}) {
		t.Errorf("chain changed with the caller's slice: %v", chain)
	}
	if !s.ServesModel(1, []byte("claude-2")) || s.Target(1).Models[0] != "claude-*" {
		t.Error("target models changed with the caller's slice")
	}
	r := s.Rule(0)
	r.Chain[0] = 0
	if s.Rule(0).Chain[0] != 1 || s.Rule(0).Key != KeyModel || s.Rule(0).Value != "m" {
		t.Error("Rule returned the snapshot's own chain")
	}
	if s.Target(2).Name != "bedrock" {
		t.Errorf("Target(2) = %+v", s.Target(2))
	}
}
