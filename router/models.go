package router

import "sort"

// computeModels builds the /v1/models list (docs/api.md, Choices). The candidates are
// the exact ids (entries without a trailing *) of every target's models
// list, every target's model_map keys (MappedModels) and the values of
// model rules. A candidate is listed when, on some
// surface, a request carrying only that model (no user, no metadata, stream
// false, no tools) matches a chain with a member serving both the model and
// that surface. OwnedBy is the provider of the first such member, trying
// surfaces in order (chat, completions, embeddings, images) and members in
// chain order. The result is sorted by ID and never nil.
func (s *Snapshot) computeModels() []ModelInfo {
	return s.modelsFor(&Request{}, &modelSet{any: true}, nil)
}

// modelsFor is computeModels for requests shaped like base (its user and
// metadata), listing only models allow admits, with extra as further
// candidates.
func (s *Snapshot) modelsFor(base *Request, allow *modelSet, extra []string) []ModelInfo {
	seen := make(map[string]bool)
	var ids []string
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, t := range s.targets {
		for _, m := range t.Models {
			if !isPattern(m) {
				add(m)
			}
		}
		for _, m := range t.MappedModels {
			add(m)
		}
	}
	for _, r := range s.rules {
		if r.Key == KeyModel {
			add(r.Value)
		}
	}
	for _, m := range extra {
		add(m)
	}
	sort.Strings(ids)
	out := make([]ModelInfo, 0, len(ids))
	for _, id := range ids {
		if !allow.has([]byte(id)) {
			continue
		}
		if owner, ok := s.routableOwner(base, id); ok {
			out = append(out, ModelInfo{ID: id, OwnedBy: owner})
		}
	}
	return out
}

// routableOwner reports whether a request like base for model routes to a
// chain member that serves it on some surface, and that member's provider.
func (s *Snapshot) routableOwner(base *Request, model string) (string, bool) {
	req := *base
	req.Model = []byte(model)
	for x := Surface(0); x < NumSurfaces; x++ {
		req.Surface = x
		_, chain := s.Match(&req)
		for _, t := range chain {
			if s.ServesSurface(t, x) && s.ServesModel(t, req.Model) {
				return s.targets[t].Provider, true
			}
		}
	}
	return "", false
}
