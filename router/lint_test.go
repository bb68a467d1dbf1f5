package router

import (
	"fmt"
	"strings"
	"testing"
)

// lintTargets: fallback openai (any model), anthropic (claude-*), bedrock
// (exact ids), spare (never named unless a test names it).
func lintTargets() []TargetSpec {
	return []TargetSpec{
		{Name: "openai", Provider: "openai", Surfaces: AllSurfaces},
		{Name: "anthropic", Provider: "anthropic", Surfaces: 1 << SurfaceChat, Models: []string{"claude-*"}},
		{Name: "bedrock", Provider: "bedrock", Surfaces: 1 << SurfaceChat, Models: []string{"claude-3-haiku", "llama3-70b"}},
		{Name: "spare", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"gpt-4o", "o*"}},
	}
}

// wantFinding is a finding expected by rule/target index and message parts.
type wantFinding struct {
	rule, target int
	parts        []string
}

func checkFindings(t *testing.T, got []Finding, want []wantFinding) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d findings, want %d:\n%s", len(got), len(want), fmtFindings(got))
	}
	for i, w := range want {
		g := got[i]
		if g.Rule != w.rule || g.Target != w.target {
			t.Errorf("finding %d = rule %d target %d, want rule %d target %d\n%s", i, g.Rule, g.Target, w.rule, w.target, fmtFindings(got))
		}
		for _, p := range w.parts {
			if !strings.Contains(g.Message, p) {
				t.Errorf("finding %d message %q lacks %q", i, g.Message, p)
			}
		}
	}
}

func fmtFindings(fs []Finding) string {
	var sb strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&sb, "  rule %d target %d: %s\n", f.Rule, f.Target, f.Message)
	}
	return sb.String()
}

func TestLintClean(t *testing.T) {
	rules := []RuleSpec{
		{Key: KeyModel, Value: "gpt-4o", Chain: []int{3, 0}},
		{Key: KeyModelPrefix, Value: "claude-", Chain: []int{1, 2}},
		{Key: KeyUser, Value: "vip", Chain: []int{0}},
		{Key: KeyStream, Value: "true", Chain: []int{1}},
		{Key: KeyStream, Value: "false", Chain: []int{0}},
	}
	if got := Lint(rules, lintTargets()); got != nil {
		t.Fatalf("clean config: findings\n%s", fmtFindings(got))
	}
}

func TestLintShadowed(t *testing.T) {
	rules := []RuleSpec{
		{Key: KeyModelPrefix, Value: "claude-", Chain: []int{1}},          // 0
		{Key: KeyModel, Value: "claude-3-haiku", Chain: []int{2}},         // 1: under 0
		{Key: KeyModelPrefix, Value: "claude-3-", Chain: []int{2, 1}},     // 2: under 0
		{Key: KeyUser, Value: "vip", Chain: []int{3}},                     // 3
		{Key: KeyUser, Value: "vip", Chain: []int{0}},                     // 4: dup of 3
		{Key: KeyStream, Value: "true", Chain: []int{0}},                  // 5
		{Key: KeyStream, Value: "false", Chain: []int{0}},                 // 6: not a dup
		{Key: KeyStream, Value: "true", Chain: []int{3}},                  // 7: dup of 5
		{Key: KeyMetadata, Field: "tier", Value: "gold", Chain: []int{0}}, // 8
		{Key: KeyMetadata, Field: "team", Value: "gold", Chain: []int{0}}, // 9: other field
		{Key: KeyMetadata, Field: "tier", Value: "gold", Chain: []int{3}}, // 10: dup of 8
		{Key: KeyModel, Value: "gpt-4o", Chain: []int{3}},                 // 11
		{Key: KeyModel, Value: "gpt-4o", Chain: []int{0}},                 // 12: dup of 11
		{Key: KeyModelPrefix, Value: "claude-", Chain: []int{2}},          // 13: dup of 0
		{Key: KeyHasTools, Value: "false", Chain: []int{0}},               // 14
		{Key: KeyHasTools, Value: "false", Chain: []int{0}},               // 15: dup of 14
		{Key: KeyModel, Value: "claude", Chain: []int{0}},                 // 16: "claude" lacks the "-"
		{Key: KeyModelPrefix, Value: "claude", Chain: []int{0}},           // 17: shorter, later: fine
		{Key: KeyModel, Value: "claude-2", Chain: []int{0}},               // 18: under 0 (earliest)
	}
	got := Lint(rules, lintTargets())
	checkFindings(t, got, []wantFinding{
		{1, -1, []string{"never matches", "strategy.conditions[0] (model_prefix: claude-)"}},
		{2, -1, []string{"never matches", "strategy.conditions[0]"}},
		{4, -1, []string{"repeats strategy.conditions[3] (user: vip)"}},
		{7, -1, []string{"repeats strategy.conditions[5] (stream: true)"}},
		{10, -1, []string{"repeats strategy.conditions[8] (metadata tier: gold)"}},
		{12, -1, []string{"repeats strategy.conditions[11] (model: gpt-4o)"}},
		{13, -1, []string{"repeats strategy.conditions[0] (model_prefix: claude-)"}},
		{15, -1, []string{"repeats strategy.conditions[14]"}},
		{18, -1, []string{"strategy.conditions[0] (model_prefix: claude-) comes first"}},
	})
}

func TestLintUnreachableTarget(t *testing.T) {
	rules := []RuleSpec{{Key: KeyModelPrefix, Value: "claude-", Chain: []int{1}}}
	got := Lint(rules, lintTargets())
	checkFindings(t, got, []wantFinding{
		{-1, 2, []string{`"bedrock" is unreachable`, "targets[0]"}},
		{-1, 3, []string{`"spare" is unreachable`}},
	})
	// targets[0] is the fallback: never unreachable, even when no rule names it.
	if got := Lint(nil, lintTargets()[:1]); got != nil {
		t.Errorf("single fallback target: findings\n%s", fmtFindings(got))
	}
}

func TestLintChainMembers(t *testing.T) {
	rules := []RuleSpec{
		// bedrock does not list gpt-4o; spare and openai serve it.
		{Key: KeyModel, Value: "gpt-4o", Chain: []int{3, 2, 0}},
		// anthropic's claude-* is compatible with the prefix "cl"; spare
		// neither lists an id starting with "cl" nor a compatible pattern.
		{Key: KeyModelPrefix, Value: "cl", Chain: []int{1, 3}},
		// bedrock's llama3-70b starts with "llama"; spare's "o*" is
		// compatible with "o1-" (it is a prefix of it).
		{Key: KeyModelPrefix, Value: "llama", Chain: []int{2}},
		{Key: KeyModelPrefix, Value: "o1-", Chain: []int{3}},
		// Nobody in the chain serves the model: one rule-level finding.
		{Key: KeyModel, Value: "mistral-large", Chain: []int{1, 2}},
		{Key: KeyModelPrefix, Value: "gemini", Chain: []int{1, 3}},
		// Keys whose models are unknown are not checked.
		{Key: KeyUser, Value: "vip", Chain: []int{1}},
		{Key: KeyMetadata, Field: "f", Value: "v", Chain: []int{2}},
	}
	got := Lint(rules, lintTargets())
	checkFindings(t, got, []wantFinding{
		{0, 2, []string{`chain member "bedrock" does not serve model "gpt-4o"`, "never a candidate"}},
		{1, 3, []string{`chain member "spare" does not serve a model starting with "cl"`}},
		{4, -1, []string{`no chain member ("anthropic", "bedrock") serves model "mistral-large"`, "404 model_not_found"}},
		{5, -1, []string{`no chain member ("anthropic", "spare") serves a model starting with "gemini"`, "404 model_not_found"}},
	})
}

func TestLintInvalidInput(t *testing.T) {
	got := Lint([]RuleSpec{{Key: KeyModel, Value: "m"}}, lintTargets())
	checkFindings(t, got, []wantFinding{{-1, -1, []string{"empty chain"}}})
}
