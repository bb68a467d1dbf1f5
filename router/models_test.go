package router

import (
	"slices"
	"testing"
)

func TestModelsList(t *testing.T) {
	targets := []TargetSpec{
		// Fallback: serves only gpt-* models, on every surface.
		{Name: "openai", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"gpt-4o", "gpt-5*", "text-embedding-3-small"}},
		{Name: "anthropic", Provider: "anthropic", Surfaces: 1 << SurfaceChat, Models: []string{"claude-3-opus", "claude-*"}},
		{Name: "bedrock", Provider: "bedrock", Surfaces: 1 << SurfaceChat, Models: []string{"claude-3-opus", "llama3"}},
		// Reachable by no rule: its models are not listed.
		{Name: "spare", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"mistral-large"}},
		// Named by a rule but serves no surface.
		{Name: "dead", Provider: "openai", Surfaces: 0, Models: []string{"ghost"}},
	}
	rules := []RuleSpec{
		{Key: KeyModelPrefix, Value: "claude-", Chain: []int{2, 1}},
		{Key: KeyModel, Value: "llama3", Chain: []int{1, 2}},
		// A model rule value nobody in its chain serves: not listed.
		{Key: KeyModel, Value: "o3", Chain: []int{1}},
		// Served by the chain (any model): listed, owned by openai.
		{Key: KeyModel, Value: "o1", Chain: []int{3}},
		{Key: KeyModel, Value: "ghost", Chain: []int{4}},
		// Only a vip or a stream goes to spare: a bare request does not.
		{Key: KeyUser, Value: "vip", Chain: []int{3}},
		{Key: KeyStream, Value: "true", Chain: []int{3}},
	}
	targets[3].Models = append(targets[3].Models, "o1")
	s := mustCompile(t, rules, targets)
	want := []ModelInfo{
		{ID: "claude-3-opus", OwnedBy: "bedrock"}, // first serving member of [bedrock, anthropic]
		{ID: "gpt-4o", OwnedBy: "openai"},         // no match: fallback serves it
		{ID: "llama3", OwnedBy: "bedrock"},        // anthropic (first) does not serve llama3
		{ID: "o1", OwnedBy: "openai"},
		{ID: "text-embedding-3-small", OwnedBy: "openai"},
	}
	if got := s.Models(); !slices.Equal(got, want) {
		t.Errorf("Models() =\n %v\nwant\n %v", got, want)
	}
}

func TestModelsSurfaceSpecificChain(t *testing.T) {
	// On chat and completions, `stream: false` sends a bare request to a
	// chain that does not serve "emb"; on embeddings the stream rule is
	// skipped and the request falls back to targets[0], which does.
	targets := []TargetSpec{
		{Name: "fallback", Provider: "openai", Surfaces: 1 << SurfaceEmbeddings, Models: []string{"emb"}},
		{Name: "chat", Provider: "anthropic", Surfaces: 1 << SurfaceChat, Models: []string{"claude-*"}},
	}
	rules := []RuleSpec{{Key: KeyStream, Value: "false", Chain: []int{1}}}
	s := mustCompile(t, rules, targets)
	if got, want := s.Models(), []ModelInfo{{ID: "emb", OwnedBy: "openai"}}; !slices.Equal(got, want) {
		t.Errorf("Models() = %v, want %v", got, want)
	}
	// Moving the fallback's only surface to chat makes emb unroutable.
	targets[0].Surfaces = 1 << SurfaceChat
	s = mustCompile(t, rules, targets)
	if got := s.Models(); got == nil || len(got) != 0 {
		t.Errorf("Models() = %#v, want empty non-nil", got)
	}
}

func TestModelsNeverNilAndNoPatterns(t *testing.T) {
	targets := []TargetSpec{{Name: "a", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"gpt-*", "*"}}}
	s := mustCompile(t, nil, targets)
	if got := s.Models(); got == nil || len(got) != 0 {
		t.Errorf("Models() = %#v, want empty non-nil (patterns are not ids)", got)
	}
	// Any-model target and no exact ids anywhere: still empty, not nil.
	s = mustCompile(t, nil, []TargetSpec{{Name: "a", Provider: "openai", Surfaces: AllSurfaces}})
	if got := s.Models(); got == nil || len(got) != 0 {
		t.Errorf("Models() = %#v, want empty non-nil", got)
	}
}

func TestModelsDeduplicated(t *testing.T) {
	targets := []TargetSpec{
		{Name: "a", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"m", "m", "b"}},
		{Name: "b", Provider: "bedrock", Surfaces: AllSurfaces, Models: []string{"m"}},
	}
	rules := []RuleSpec{{Key: KeyModel, Value: "m", Chain: []int{1, 0}}, {Key: KeyModel, Value: "m", Chain: []int{0}}}
	s := mustCompile(t, rules, targets)
	want := []ModelInfo{{ID: "b", OwnedBy: "openai"}, {ID: "m", OwnedBy: "bedrock"}}
	if got := s.Models(); !slices.Equal(got, want) {
		t.Errorf("Models() = %v, want %v", got, want)
	}
}

// TestModelsIncludeModelMapKeys: a model_map key is an exact id the
// operator named, so it is a /v1/models candidate even when the target's
// models list is omitted (any model); like any candidate it is listed
// only when a bare request for it is routable.
func TestModelsIncludeModelMapKeys(t *testing.T) {
	targets := []TargetSpec{
		{Name: "openai", Provider: "openai", Surfaces: AllSurfaces, Models: []string{"gpt-4o"}},
		{Name: "anthropic", Provider: "anthropic", Surfaces: 1 << SurfaceChat},
		// Any model; maps two visible ids.
		{Name: "bedrock", Provider: "bedrock", Surfaces: 1 << SurfaceChat,
			MappedModels: []string{"claude-sonnet-4-6", "mistral-large"}},
	}
	rules := []RuleSpec{{Key: KeyModelPrefix, Value: "claude-", Chain: []int{1, 2}}}
	s := mustCompile(t, rules, targets)
	want := []ModelInfo{
		{ID: "claude-sonnet-4-6", OwnedBy: "anthropic"}, // routed by rule 0; anthropic serves any model
		{ID: "gpt-4o", OwnedBy: "openai"},
		// mistral-large: no rule matches, the fallback does not serve it.
	}
	if got := s.Models(); !slices.Equal(got, want) {
		t.Errorf("Models() =\n %v\nwant\n %v", got, want)
	}
	// The snapshot keeps its own copy.
	targets[2].MappedModels[0] = "changed"
	if got := s.Target(2).MappedModels; !slices.Equal(got, []string{"claude-sonnet-4-6", "mistral-large"}) {
		t.Errorf("Target(2).MappedModels = %v after the caller changed its slice", got)
	}
}

// A model that only the responses or messages surface routes is listed,
// owned by the member serving it there.
func TestModelsOnNewSurfaces(t *testing.T) {
	targets := []TargetSpec{
		{Name: "fallback", Provider: "openai", Surfaces: 1 << SurfaceChat, Models: []string{"gpt-4o"}},
		{Name: "resp", Provider: "openai", Surfaces: 1 << SurfaceResponses, Models: []string{"o3-pro"}},
		{Name: "msgs", Provider: "anthropic", Surfaces: 1 << SurfaceMessages, Models: []string{"claude-opus"}},
	}
	rules := []RuleSpec{
		{Key: KeyModel, Value: "o3-pro", Chain: []int{1}},
		{Key: KeyModelPrefix, Value: "claude-", Chain: []int{0, 2}},
	}
	s := mustCompile(t, rules, targets)
	want := []ModelInfo{{ID: "claude-opus", OwnedBy: "anthropic"}, {ID: "gpt-4o", OwnedBy: "openai"}, {ID: "o3-pro", OwnedBy: "openai"}}
	if got := s.Models(); !slices.Equal(got, want) {
		t.Errorf("models %v, want %v", got, want)
	}
}
