package router

import (
	"fmt"
	"strings"
)

// Finding is one lint warning: a configuration that loads and routes, but
// not the way its author probably meant (SPEC §1 validate).
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
// order; nil when there are none:
//
//   - a rule that can never win because an earlier rule matches every
//     request it would (a duplicate; a model or model_prefix under an
//     earlier model_prefix that is a prefix of it);
//   - a target, other than targets[0], that no chain names;
//   - a chain member that serves none of the models its rule routes, and a
//     rule whose chain serves none of them (every request gets 404).
//
// Input that Compile refuses yields one finding with Rule and Target -1
// carrying Compile's error; configuration validation is expected to have
// reported it already.
func Lint(rules []RuleSpec, targets []TargetSpec) []Finding {
	s, err := Compile(rules, targets, 0)
	if err != nil {
		return []Finding{{Rule: -1, Target: -1, Message: err.Error()}}
	}
	var out []Finding
	for j := range s.rules {
		if f, ok := s.shadowFinding(j); ok {
			out = append(out, f)
		}
		out = append(out, s.chainFindings(j)...)
	}
	named := make([]bool, len(s.targets))
	named[0] = true
	for _, c := range s.chains {
		for _, t := range c {
			named[t] = true
		}
	}
	for t, ok := range named {
		if !ok {
			out = append(out, Finding{Rule: -1, Target: t, Message: fmt.Sprintf(
				"target %q is unreachable: no condition names it and it is not the fallback (targets[0])",
				s.targets[t].Name)})
		}
	}
	return out
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
