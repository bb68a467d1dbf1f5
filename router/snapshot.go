package router

import (
	"fmt"
	"strings"
)

// Snapshot is an immutable compiled routing table. Safe for concurrent use;
// lookups take no lock and allocate nothing.
//
// Every key kind is compiled into a structure that answers "the lowest rule
// index of this kind that matches" in time independent of the number of
// rules: maps for model, user and metadata, a prefix trie for model_prefix,
// and the first true/false index for stream and has_tools. Match takes the
// lowest answer across kinds, which is the first rule in declared order that
// matches.
type Snapshot struct {
	targets []TargetSpec
	rules   []RuleSpec
	created int64

	// fallback is the no-match chain [0]. Every rules[i].Chain is a
	// capacity-limited window of one shared backing array, so a rule's
	// chain costs no allocation of its own.
	fallback []int

	exact  map[string]int32 // model value → lowest model rule
	prefix prefixTrie       // model_prefix values → lowest rule
	users  map[string]int32 // user value → lowest user rule
	// meta is field → value → lowest metadata rule. Nesting keeps lookups
	// allocation-free: both levels are indexed with m[string(b)].
	meta map[string]map[string]int32
	// stream[b] and tools[b] are the lowest stream/has_tools rule whose
	// value is b (0 false, 1 true), or noRule.
	stream, tools [2]int32
	// first[k] is the lowest index of any rule with key k, or noRule; Match
	// skips a kind that cannot beat the best match found so far.
	first [numKeys]int32

	serve []modelSet // serve[t] answers ServesModel for target t
}

// numKeys is the number of condition keys.
const numKeys = int(KeyMetadata) + 1

// Compile builds a Snapshot. targets must be non-empty; chains must index
// into targets. created is the Unix time reported in /v1/models.
//
// Compile copies what it keeps, so the caller may reuse rules and targets
// afterwards. It returns an error, never panics, for input that config
// validation should have refused: no targets, an unknown key, a stream or
// has_tools value other than "true"/"false", an empty chain, a chain index
// out of range or repeated.
func Compile(rules []RuleSpec, targets []TargetSpec, created int64) (*Snapshot, error) {
	if len(targets) == 0 {
		return nil, fmt.Errorf("router: no targets; targets[0] is the no-match fallback and must exist")
	}
	if len(rules) >= int(noRule) {
		return nil, fmt.Errorf("router: %d rules is too many", len(rules))
	}
	s := &Snapshot{
		targets:  make([]TargetSpec, len(targets)),
		rules:    make([]RuleSpec, len(rules)),
		fallback: []int{0},
		created:  created,
		exact:    make(map[string]int32),
		users:    make(map[string]int32),
		meta:     make(map[string]map[string]int32),
		stream:   [2]int32{noRule, noRule},
		tools:    [2]int32{noRule, noRule},
		serve:    make([]modelSet, len(targets)),
	}
	for k := range s.first {
		s.first[k] = noRule
	}
	for t, ts := range targets {
		if ts.Batch&^ts.Surfaces != 0 {
			return nil, fmt.Errorf("router: target %q takes batch requests of a surface it does not serve", ts.Name)
		}
		ts.Models = cloneStrings(ts.Models)
		ts.MappedModels = cloneStrings(ts.MappedModels)
		s.targets[t] = ts
		s.serve[t] = compileModelSet(ts.Models)
	}
	var prefixes trieBuilder
	links := 0
	for _, r := range rules {
		links += len(r.Chain)
	}
	flat := make([]int, 0, links)
	for i, r := range rules {
		if err := checkRule(i, r, len(targets)); err != nil {
			return nil, err
		}
		idx := int32(i)
		at := len(flat)
		flat = append(flat, r.Chain...)
		r.Chain = flat[at:len(flat):len(flat)]
		s.rules[i] = r
		if s.first[r.Key] == noRule {
			s.first[r.Key] = idx
		}
		switch r.Key {
		case KeyModel:
			setLowest(s.exact, r.Value, idx)
		case KeyModelPrefix:
			prefixes.add(r.Value, idx)
		case KeyUser:
			setLowest(s.users, r.Value, idx)
		case KeyStream:
			setLowestBool(&s.stream, r.Value, idx)
		case KeyHasTools:
			setLowestBool(&s.tools, r.Value, idx)
		case KeyMetadata:
			vals := s.meta[r.Field]
			if vals == nil {
				vals = make(map[string]int32)
				s.meta[r.Field] = vals
			}
			setLowest(vals, r.Value, idx)
		}
	}
	s.prefix = prefixes.build()
	return s, nil
}

// checkRule reports why rule i cannot be compiled, or nil.
func checkRule(i int, r RuleSpec, numTargets int) error {
	if int(r.Key) >= numKeys {
		return fmt.Errorf("router: strategy.conditions[%d]: unknown key %d", i, r.Key)
	}
	if (r.Key == KeyStream || r.Key == KeyHasTools) && r.Value != "true" && r.Value != "false" {
		return fmt.Errorf("router: strategy.conditions[%d]: %s value %q is not \"true\" or \"false\"", i, r.Key, r.Value)
	}
	if len(r.Chain) == 0 {
		return fmt.Errorf("router: strategy.conditions[%d]: empty chain", i)
	}
	for j, t := range r.Chain {
		if t < 0 || t >= numTargets {
			return fmt.Errorf("router: strategy.conditions[%d]: chain[%d] = %d is out of range (%d targets)", i, j, t, numTargets)
		}
		for _, u := range r.Chain[:j] {
			if u == t {
				return fmt.Errorf("router: strategy.conditions[%d]: chain repeats target %d", i, t)
			}
		}
	}
	return nil
}

func setLowest(m map[string]int32, k string, v int32) {
	if old, ok := m[k]; !ok || v < old {
		m[k] = v
	}
}

func setLowestBool(a *[2]int32, value string, v int32) {
	b := 0
	if value == "true" {
		b = 1
	}
	if v < a[b] {
		a[b] = v
	}
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append(make([]string, 0, len(s)), s...)
}

// Match returns the index of the first rule (in declared order) that matches
// r and its chain, or rule -1 and the fallback chain [0] when none matches.
// The returned chain is owned by the Snapshot and must not be modified.
//
// Semantics (docs/routing.md, 3): stream, has_tools and metadata rules match only on
// chat-like surfaces (Surface.ChatLike); a user rule never matches when r.HasUser is false;
// a metadata rule matches when any entry of r.Metadata has its field and
// value, byte for byte.
//
// Match reads r without retaining it, allocates nothing, and costs a few
// map lookups and one trie walk whatever the number of rules. A kind whose
// first rule comes after the best match found so far is not looked up.
func (s *Snapshot) Match(r *Request) (rule int, chain []int) {
	best := noRule
	// Surface-gated kinds first: they are array reads.
	rich := r.Surface.ChatLike()
	if rich {
		best = s.stream[b2i(r.Stream)]
		if v := s.tools[b2i(r.HasTools)]; v < best {
			best = v
		}
	}
	if s.first[KeyModel] < best {
		if v, ok := s.exact[string(r.Model)]; ok && v < best {
			best = v
		}
	}
	if s.first[KeyModelPrefix] < best {
		best = s.prefix.lowestBelow(r.Model, best)
	}
	if r.HasUser && s.first[KeyUser] < best {
		if v, ok := s.users[string(r.User)]; ok && v < best {
			best = v
		}
	}
	if rich && s.first[KeyMetadata] < best {
		for i := range r.Metadata {
			p := &r.Metadata[i]
			if vals, ok := s.meta[string(p.Key)]; ok {
				if v, ok := vals[string(p.Value)]; ok && v < best {
					best = v
				}
			}
		}
	}
	if best == noRule {
		return -1, s.fallback
	}
	return int(best), s.rules[best].Chain
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ServesModel reports whether target t's models list admits model: nil
// models admit any model, otherwise an exact id equal to model or a
// "prefix*" pattern whose prefix starts model. An out-of-range t serves
// nothing. Allocation-free.
func (s *Snapshot) ServesModel(t int, model []byte) bool {
	if t < 0 || t >= len(s.serve) {
		return false
	}
	return s.serve[t].has(model)
}

// ServesSurface reports whether target t's provider serves surface x. An
// out-of-range t serves nothing.
func (s *Snapshot) ServesSurface(t int, x Surface) bool {
	if t < 0 || t >= len(s.targets) {
		return false
	}
	return x < NumSurfaces && s.targets[t].Surfaces.Has(x)
}

// ServesBatch reports whether target t takes requests of surface x inside
// a stored batch (TargetSpec.Batch). An out-of-range t takes none.
func (s *Snapshot) ServesBatch(t int, x Surface) bool {
	if t < 0 || t >= len(s.targets) {
		return false
	}
	return x < NumSurfaces && s.targets[t].Batch.Has(x)
}

// Models returns the /v1/models list (docs/api.md, Choices): sorted by ID, no
// duplicates, never nil. It is computed on each call (a walk over targets
// and rules, for a caller that builds the answer once per configuration) so
// the Snapshot does not keep a copy per model; the caller owns the slice.
func (s *Snapshot) Models() []ModelInfo { return s.computeModels() }

// Created returns the created timestamp passed to Compile.
func (s *Snapshot) Created() int64 { return s.created }

// NumRules returns the number of compiled rules.
func (s *Snapshot) NumRules() int { return len(s.rules) }

// NumTargets returns the number of targets (at least 1).
func (s *Snapshot) NumTargets() int { return len(s.targets) }

// Rule returns rule i as compiled (for explain). The returned value is a
// copy; i must be in [0, NumRules()).
func (s *Snapshot) Rule(i int) RuleSpec {
	r := s.rules[i]
	r.Chain = append([]int(nil), r.Chain...)
	return r
}

// Target returns target t as compiled (for explain). The returned value is
// a copy; t must be in [0, NumTargets()).
func (s *Snapshot) Target(t int) TargetSpec {
	ts := s.targets[t]
	ts.Models = cloneStrings(ts.Models)
	ts.MappedModels = cloneStrings(ts.MappedModels)
	return ts
}

// modelSet is a compiled target models list. The zero value admits
// nothing; any admits everything.
type modelSet struct {
	any    bool
	exact  map[string]struct{}
	prefix prefixTrie // pattern prefixes (the text before the trailing *)
}

// isPattern reports whether a models entry is a "prefix*" pattern.
func isPattern(m string) bool { return strings.HasSuffix(m, "*") }

func compileModelSet(models []string) modelSet {
	if models == nil {
		return modelSet{any: true}
	}
	ms := modelSet{exact: make(map[string]struct{})}
	var b trieBuilder
	for _, m := range models {
		if isPattern(m) {
			b.add(strings.TrimSuffix(m, "*"), 0)
		} else {
			ms.exact[m] = struct{}{}
		}
	}
	ms.prefix = b.build()
	return ms
}

func (ms *modelSet) has(model []byte) bool {
	if ms.any {
		return true
	}
	if _, ok := ms.exact[string(model)]; ok {
		return true
	}
	return ms.prefix.lowest(model) != noRule
}
