package router

import (
	"fmt"
	"math/rand/v2"
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
		{Key: KeyModel, Value: "llama3-70b", Chain: []int{2}},
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
		// bedrock is named only by rules that never match: unreachable as
		// a whole (no per-model findings).
		{-1, 2, []string{`target "bedrock" is unreachable: only conditions that never match name it`,
			"(strategy.conditions[1], strategy.conditions[2], strategy.conditions[13])"}},
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
		// Rule 1 (prefix "cl") takes claude-3-haiku to anthropic and spare.
		{-1, 2, []string{`model "claude-3-haiku"`, `target "bedrock"`, "strategy.conditions[1] (model_prefix: cl)"}},
	})
}

func TestLintInvalidInput(t *testing.T) {
	got := Lint([]RuleSpec{{Key: KeyModel, Value: "m"}}, lintTargets())
	checkFindings(t, got, []wantFinding{{-1, -1, []string{"empty chain"}}})
}

// TestLintUnreachableModel: docs/configuration.md, Command line "a model listed by no reachable
// target": an exact id in a target's models that no request for that model
// can route to the target, whatever its other fields and surface.
func TestLintUnreachableModel(t *testing.T) {
	targets := []TargetSpec{
		{Name: "fb", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"m-fb", "m-taken"}},                        // 0
		{Name: "eu", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"gpt-4o", "m-meta", "m-meta", "p*"}},       // 1
		{Name: "back", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"m-chain"}},                              // 2
		{Name: "vip", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"m-user", "gpt-4o"}},                      // 3
		{Name: "emb", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"m-emb"}},                                 // 4
		{Name: "chatonly", Provider: "anthropic", Surfaces: 1 << SurfaceChat, Models: []string{"m-emb"}},                    // 5
		{Name: "never", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"m-never"}},                             // 6: named by no rule
		{Name: "streamer", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"m-stream", "m-streamed-by-prefix"}}, // 7
	}
	rules := []RuleSpec{
		// 0: gpt-4o is pinned here, before the metadata rule naming eu: a
		// gold-tier gpt-4o request still goes to vip, so eu's gpt-4o is
		// unreachable (the config.example.yaml case).
		{Key: KeyModel, Value: "gpt-4o", Chain: []int{3}},
		// 1: m-taken never falls back to fb; it is routed to eu, which does
		// not serve it (fb's m-taken is unreachable).
		{Key: KeyModel, Value: "m-taken", Chain: []int{1}},
		// 2: any model with metadata tier=gold: reaches eu for m-meta.
		{Key: KeyMetadata, Field: "tier", Value: "gold", Chain: []int{1}},
		// 3: back is reached for m-chain by failover from eu.
		{Key: KeyModel, Value: "m-chain", Chain: []int{1, 2}},
		// 4: a user rule reaches vip for any model.
		{Key: KeyUser, Value: "vip", Chain: []int{3}},
		// 5, 6: stream true and false cover every chat and completions
		// request; after them only embeddings and images requests are left.
		{Key: KeyStream, Value: "true", Chain: []int{7}},
		{Key: KeyStream, Value: "false", Chain: []int{0}},
		// 7: m-emb reaches emb on embeddings; chatonly (chat only) never.
		{Key: KeyModel, Value: "m-emb", Chain: []int{5, 4}},
	}
	got := Lint(rules, targets)
	checkFindings(t, got, []wantFinding{
		{1, -1, []string{`no chain member ("eu") serves model "m-taken"`}},
		{3, 1, []string{`chain member "eu" does not serve model "m-chain"`}},
		{-1, 6, []string{`"never" is unreachable`}},
		{-1, 0, []string{`model "m-taken" is listed, but no request for it can reach target "fb"`,
			"strategy.conditions[1] (model: m-taken) routes it first"}},
		{-1, 1, []string{`model "gpt-4o"`, `target "eu"`, "strategy.conditions[0] (model: gpt-4o) routes it first"}},
		{-1, 5, []string{`model "m-emb"`, `target "chatonly"`, "strategy.conditions[6] (stream: false) routes it first"}},
	})

	// Without the stream rules, a bare m-emb chat request reaches chatonly,
	// and fb is the fallback for m-fb.
	var trimmed []RuleSpec
	for _, r := range rules {
		if r.Key != KeyStream {
			trimmed = append(trimmed, r)
		}
	}
	for _, f := range Lint(trimmed, targets) {
		if f.Target == 5 || strings.Contains(f.Message, "m-fb") || strings.Contains(f.Message, "m-stream") {
			t.Errorf("unexpected finding: target %d: %s", f.Target, f.Message)
		}
	}

	// The fallback itself: a listed model that no rule takes reaches it
	// alone; once a model_prefix rule takes it elsewhere, it does not.
	fbOnly := []TargetSpec{{Name: "fb", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"a-1", "b-1"}},
		{Name: "x", Provider: "openai", Surfaces: AllSurfaces}}
	got = Lint([]RuleSpec{{Key: KeyModelPrefix, Value: "b-", Chain: []int{1}}}, fbOnly)
	checkFindings(t, got, []wantFinding{
		{-1, 0, []string{`model "b-1"`, `target "fb"`, "strategy.conditions[0] (model_prefix: b-) routes it first"}},
	})
	// A fallback member that no rule shadows: no finding.
	if got := Lint(nil, fbOnly[:1]); got != nil {
		t.Errorf("fallback-only config: findings\n%s", fmtFindings(got))
	}
}

// TestLintUnreachableModelDifferential checks the unreachable-model
// findings against brute force: every request that could matter (each
// user value any rule names, or none, or another; every subset of the
// metadata entries rules name; both stream and has_tools values; every
// surface) is matched with linearMatch, and a target's listed exact id is
// reachable when one of them routes it to a chain holding the target on a
// surface its provider serves.
func TestLintUnreachableModelDifferential(t *testing.T) {
	c := randChooser{rand.New(rand.NewPCG(7, 11))}
	for iter := range 400 {
		targets := genTargets(c, 4)
		rules := genRules(c, 7, len(targets))
		type user struct {
			value string
			has   bool
		}
		users := []user{{"", false}, {"zz", true}}
		var pairs []Pair
		named := make([]bool, len(targets))
		named[0] = true
		for _, r := range rules {
			for _, x := range r.Chain {
				named[x] = true
			}
			switch r.Key {
			case KeyUser:
				users = append(users, user{r.Value, true})
			case KeyMetadata:
				pairs = append(pairs, Pair{Key: []byte(r.Field), Value: []byte(r.Value)})
			}
		}
		// reachable: some request for model has ti in its chain, on a
		// surface ti serves (or on any surface, with anySurface).
		reachable := func(ti int, model string, anySurface bool) bool {
			for x := Surface(0); x < NumSurfaces; x++ {
				if !anySurface && !targets[ti].Surfaces.Has(x) {
					continue
				}
				for _, u := range users {
					for set := 0; set < 1<<len(pairs); set++ {
						req := Request{Surface: x, Model: []byte(model), User: []byte(u.value), HasUser: u.has}
						for k := range pairs {
							if set&(1<<k) != 0 {
								req.Metadata = append(req.Metadata, pairs[k])
							}
						}
						for sc := 0; sc < 4; sc++ {
							req.Stream, req.HasTools = sc&1 != 0, sc&2 != 0
							_, chain := linearMatch(rules, &req)
							for _, m := range chain {
								if m == ti {
									return true
								}
							}
						}
					}
				}
			}
			return false
		}
		findings := Lint(rules, targets)
		// A target reported unreachable as a whole is reached by no request
		// for any model that could matter (listed ids, rule values, another
		// id), and gets no per-model findings.
		deadTarget := make([]bool, len(targets))
		for _, f := range findings {
			if f.Rule == -1 && f.Target >= 0 && strings.Contains(f.Message, "is unreachable") {
				deadTarget[f.Target] = true
				probes := append([]string{"zz", "a", "b-"}, targets[f.Target].Models...)
				for _, r := range rules {
					probes = append(probes, r.Value, r.Value+"a")
				}
				for _, m := range probes {
					if reachable(f.Target, m, true) {
						t.Fatalf("iteration %d: %s, but a request for %q reaches it\nrules %+v\ntargets %+v",
							iter, f.Message, m, rules, targets)
					}
				}
			}
		}
		want := map[string]bool{}
		for ti, tg := range targets {
			if !named[ti] || deadTarget[ti] {
				continue
			}
			for _, m := range tg.Models {
				if !strings.HasSuffix(m, "*") && !reachable(ti, m, false) {
					want[fmt.Sprintf("%d %q", ti, m)] = true
				}
			}
		}
		got := map[string]bool{}
		for _, f := range findings {
			if rest, ok := strings.CutPrefix(f.Message, "model "); ok && f.Rule == -1 {
				q, _, _ := strings.Cut(rest, " is listed")
				got[fmt.Sprintf("%d %s", f.Target, q)] = true
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("iteration %d: unreachable models %v, brute force %v\nrules %+v\ntargets %+v", iter, got, want, rules, targets)
		}
	}
}
