package router

import (
	"fmt"
	"strings"
)

// Finding is one lint warning: a configuration that loads and routes, but
// not the way its author probably meant (docs/configuration.md, Command line validate).
type Finding struct {
	// Rule is the index of the condition concerned, or -1.
	Rule int
	// Target is the index of the target concerned, or -1.
	Target int
	// Message says what is wrong, without the path of the condition or
	// target it is about (the caller prefixes that).
	Message string
}

// Lint returns the warnings for a rule set, in rule order, then target
// order; nil when there are none. What it finds is listed in
// docs/design.md ("Lint"). Input that Compile refuses yields one finding
// with Rule and Target -1 carrying Compile's error.
func Lint(rules []RuleSpec, targets []TargetSpec) []Finding {
	s, err := Compile(rules, targets, 0)
	if err != nil {
		return []Finding{{Rule: -1, Target: -1, Message: err.Error()}}
	}
	var out []Finding
	shadowed := make([]bool, len(s.rules))
	for j := range s.rules {
		if f, ok := s.shadowFinding(j); ok {
			out = append(out, f)
			shadowed[j] = true
		}
		out = append(out, s.chainFindings(j)...)
	}
	// A target is reachable when the fallback or a rule that can match
	// names it. byShadowed lists the never-matching rules naming the
	// others, to say why they are unreachable.
	named := make([]bool, len(s.targets))
	named[0] = true
	byShadowed := make([][]string, len(s.targets))
	for j := range s.rules {
		for _, t := range s.rules[j].Chain {
			if shadowed[j] {
				byShadowed[t] = append(byShadowed[t], fmt.Sprintf("strategy.conditions[%d]", j))
			} else {
				named[t] = true
			}
		}
	}
	for t, ok := range named {
		switch {
		case ok:
		case len(byShadowed[t]) > 0:
			out = append(out, Finding{Rule: -1, Target: t, Message: fmt.Sprintf(
				"target %q is unreachable: only conditions that never match name it (%s)",
				s.targets[t].Name, strings.Join(byShadowed[t], ", "))})
		default:
			out = append(out, Finding{Rule: -1, Target: t, Message: fmt.Sprintf(
				"target %q is unreachable: no condition names it and it is not the fallback (targets[0])",
				s.targets[t].Name)})
		}
	}
	out = append(out, s.modelFindings(named)...)
	return out
}

// modelFindings reports the exact ids of each named target's models list
// that no request can route to that target (see Lint), in target order,
// then models order.
func (s *Snapshot) modelFindings(named []bool) []Finding {
	// Per target: the model rules naming it by value, the model_prefix
	// rules and the other rules naming it.
	type byTarget struct {
		exact  map[string][]int
		others []int
	}
	idx := make([]byTarget, len(s.targets))
	for j, r := range s.rules {
		for _, t := range r.Chain {
			if r.Key == KeyModel {
				if idx[t].exact == nil {
					idx[t].exact = make(map[string][]int)
				}
				idx[t].exact[r.Value] = append(idx[t].exact[r.Value], j)
			} else {
				idx[t].others = append(idx[t].others, j)
			}
		}
	}
	var out []Finding
	for t := range s.targets {
		if !named[t] {
			continue
		}
		seen := make(map[string]bool)
		for _, m := range s.targets[t].Models {
			if isPattern(m) || seen[m] {
				continue
			}
			seen[m] = true
			p := s.probe(m)
			reach := t == 0 && s.routes(-1, &p, t)
			for _, j := range idx[t].exact[m] {
				if reach {
					break
				}
				reach = s.routes(j, &p, t)
			}
			for _, j := range idx[t].others {
				// others is in rule order; none after the cover can win.
				if reach || int32(j) > p.cover {
					break
				}
				if r := s.rules[j]; r.Key != KeyModelPrefix || strings.HasPrefix(m, r.Value) {
					reach = s.routes(j, &p, t)
				}
			}
			if !reach {
				out = append(out, Finding{Rule: -1, Target: t, Message: fmt.Sprintf(
					"model %q is listed, but no request for it can reach target %q: %s",
					m, s.targets[t].Name, s.bareRoute(m))})
			}
		}
	}
	return out
}

// modelProbe is what routes needs to know about one model, computed once.
type modelProbe struct {
	model []byte
	// cover is the lowest model or model_prefix rule matching model (or
	// noRule): it matches every request for model, so no later rule can
	// win. rich is cover lowered, for chat-like surfaces, to the later
	// rule of a stream true/false pair or of a has_tools pair, which
	// together match every request there.
	cover, rich int32
}

func (s *Snapshot) probe(model string) modelProbe {
	p := modelProbe{model: []byte(model)}
	p.cover = s.prefix.lowest(p.model)
	if v, ok := s.exact[model]; ok {
		p.cover = min(p.cover, v)
	}
	p.rich = min(p.cover, max(s.stream[0], s.stream[1]), max(s.tools[0], s.tools[1]))
	return p
}

// routes reports whether some request for p's model, on a surface target
// t serves, is won by rule j (-1: no rule, the fallback) and so has t in
// its chain. The witnesses are minimal: the user and the one metadata
// entry rule j needs, if any, and every stream/has_tools combination.
// Adding a user or metadata entry can only make an earlier rule match, so
// when no minimal witness is won by j, no request is. Rules after p's
// cover are answered without calling Match (it would say the same).
func (s *Snapshot) routes(j int, p *modelProbe, t int) bool {
	req := Request{Model: p.model}
	var md [1]Pair
	built := j < 0
	for x := Surface(0); x < NumSurfaces; x++ {
		if !s.ServesSurface(t, x) {
			continue
		}
		limit := p.cover
		if x.ChatLike() {
			limit = p.rich
		}
		if j >= 0 && int32(j) > limit {
			continue
		}
		if !built {
			built = true
			switch r := s.rules[j]; r.Key {
			case KeyUser:
				req.User, req.HasUser = []byte(r.Value), true
			case KeyMetadata:
				md[0] = Pair{Key: []byte(r.Field), Value: []byte(r.Value)}
				req.Metadata = md[:]
			}
		}
		req.Surface = x
		for c := 0; c < 4; c++ {
			req.Stream, req.HasTools = c&1 != 0, c&2 != 0
			if got, _ := s.Match(&req); got == j {
				return true
			}
		}
	}
	return false
}

// bareRoute says where a chat request carrying only model goes, to explain
// a model finding.
func (s *Snapshot) bareRoute(model string) string {
	j, _ := s.Match(&Request{Surface: SurfaceChat, Model: []byte(model)})
	if j < 0 {
		return fmt.Sprintf("it matches no condition and goes to the fallback %q alone", s.targets[0].Name)
	}
	return fmt.Sprintf("strategy.conditions[%d] (%s) routes it first", j, describeRule(s.rules[j]))
}

// shadowFinding reports the earliest rule that matches every request rule
// j would, if there is one before j.
func (s *Snapshot) shadowFinding(j int) (Finding, bool) {
	r := s.rules[j]
	i := noRule
	switch r.Key {
	case KeyModel:
		i = s.exact[r.Value]
		if p := s.prefix.lowest([]byte(r.Value)); p < i {
			i = p
		}
	case KeyModelPrefix:
		// The walk also finds r itself, or an earlier duplicate of it.
		i = s.prefix.lowest([]byte(r.Value))
	case KeyUser:
		i = s.users[r.Value]
	case KeyStream:
		i = s.stream[b2i(r.Value == "true")]
	case KeyHasTools:
		i = s.tools[b2i(r.Value == "true")]
	case KeyMetadata:
		i = s.meta[r.Field][r.Value]
	}
	if int(i) >= j {
		return Finding{}, false
	}
	e := s.rules[i]
	var msg string
	if e.Key == r.Key && e.Field == r.Field && e.Value == r.Value {
		msg = fmt.Sprintf("never matches: it repeats strategy.conditions[%d] (%s), which comes first", i, describeRule(e))
	} else {
		msg = fmt.Sprintf("never matches: strategy.conditions[%d] (%s) comes first and matches every request it would",
			i, describeRule(e))
	}
	return Finding{Rule: j, Target: -1, Message: msg}, true
}

// chainFindings reports chain members of rule j that can serve none of the
// models it routes, when those are known (model and model_prefix rules).
func (s *Snapshot) chainFindings(j int) []Finding {
	r := s.rules[j]
	var serves func(t int) bool
	var what string
	switch r.Key {
	case KeyModel:
		serves = func(t int) bool { return s.ServesModel(t, []byte(r.Value)) }
		what = fmt.Sprintf("model %q", r.Value)
	case KeyModelPrefix:
		serves = func(t int) bool { return servesSomePrefixed(s.targets[t].Models, r.Value) }
		what = fmt.Sprintf("a model starting with %q", r.Value)
	default:
		return nil
	}
	var bad []int
	for _, t := range r.Chain {
		if !serves(t) {
			bad = append(bad, t)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	if len(bad) == len(r.Chain) {
		names := make([]string, len(bad))
		for k, t := range bad {
			names[k] = fmt.Sprintf("%q", s.targets[t].Name)
		}
		return []Finding{{Rule: j, Target: -1, Message: fmt.Sprintf(
			"no chain member (%s) serves %s: every request it matches gets 404 model_not_found",
			strings.Join(names, ", "), what)}}
	}
	out := make([]Finding, 0, len(bad))
	for _, t := range bad {
		out = append(out, Finding{Rule: j, Target: t, Message: fmt.Sprintf(
			"chain member %q does not serve %s, so it is never a candidate for this condition",
			s.targets[t].Name, what)})
	}
	return out
}

// servesSomePrefixed reports whether a models list admits at least one
// model starting with p: nil admits any model; an exact id must start with
// p; a pattern's prefix must start with p or be a prefix of p.
func servesSomePrefixed(models []string, p string) bool {
	if models == nil {
		return true
	}
	for _, m := range models {
		if isPattern(m) {
			q := strings.TrimSuffix(m, "*")
			if strings.HasPrefix(q, p) || strings.HasPrefix(p, q) {
				return true
			}
		} else if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// describeRule renders a rule as its condition, e.g. "model: gpt-4o" or
// "metadata tier: gold".
func describeRule(r RuleSpec) string {
	if r.Key == KeyMetadata {
		return fmt.Sprintf("metadata %s: %s", r.Field, r.Value)
	}
	return fmt.Sprintf("%s: %s", r.Key, r.Value)
}
