package router

import (
	"fmt"
	"strconv"
	"strings"
)

// KeyFinding is one lint warning about client keys (docs/client-keys.md).
type KeyFinding struct {
	// Rule is the index of the condition concerned, or -1.
	Rule int
	// Key is the index of the client key concerned, or -1.
	Key int
	// Message says what is wrong, without the path it is about.
	Message string
}

// LintKeys returns the client key warnings for a rule set, rules first (in
// rule order), then keys (in key order); nil when keys is empty or nothing
// is wrong:
//
//   - a user or metadata rule whose field some key leaves unbound: that
//     key's clients can claim the rule by sending the value themselves;
//   - a key that can route no model: with its bindings applied (and
//     nothing else claimed), no model its allow-list admits routes to a
//     chain member serving it on some surface.
//
// Input that Compile refuses yields one finding carrying Compile's error.
func LintKeys(rules []RuleSpec, targets []TargetSpec, keys []KeySpec) []KeyFinding {
	if len(keys) == 0 {
		return nil
	}
	s, err := Compile(rules, targets, 0)
	if err != nil {
		return []KeyFinding{{Rule: -1, Key: -1, Message: err.Error()}}
	}
	var out []KeyFinding
	for j, r := range s.rules {
		var open []string
		var claim string
		switch r.Key {
		case KeyUser:
			for i := range keys {
				if !keys[i].HasUser {
					open = append(open, keys[i].Name)
				}
			}
			claim = "sending user " + strconv.Quote(r.Value)
		case KeyMetadata:
			for i := range keys {
				if !boundEntry(keys[i].Metadata, []byte(r.Field)) {
					open = append(open, keys[i].Name)
				}
			}
			claim = fmt.Sprintf("sending X-Gateway-Metadata {%q: %q}", r.Field, r.Value)
		default:
			continue
		}
		if len(open) == 0 {
			continue
		}
		what := "user"
		if r.Key == KeyMetadata {
			what = "metadata " + strconv.Quote(r.Field)
		}
		verb, their, them := "leave", "their", "them"
		if len(open) == 1 {
			verb, their, them = "leaves", "its", "it"
		}
		out = append(out, KeyFinding{Rule: j, Key: -1, Message: fmt.Sprintf(
			"client %s %s %s unbound: %s clients can claim this rule by %s; bind %s on %s",
			nameList(open), verb, what, their, claim, what, them)})
	}
	for i := range keys {
		if !s.keyRoutesSome(&keys[i]) {
			out = append(out, KeyFinding{Rule: -1, Key: i, Message: fmt.Sprintf(
				"client key %q can route no model: with its bindings and allow-list, every model it may use routes to a chain whose members do not serve it (404) or is refused (403)",
				keys[i].Name)})
		}
	}
	return out
}

// keyRoutesSome reports whether some model k may use routes, with k's
// bindings, to a chain member serving it on some surface. Probes stand for
// the models: every exact id the config or allow-list names, every prefix
// a rule, target or allow-list pattern names (as a model id of its own),
// and one id that nothing names.
func (s *Snapshot) keyRoutesSome(k *KeySpec) bool {
	var base Request
	Bind(&base, k, nil)
	allow := compileModelSet(k.Models)
	probes := []string{"\x00unnamed"}
	addAll := func(models []string) {
		for _, m := range models {
			probes = append(probes, strings.TrimSuffix(m, "*"))
		}
	}
	for _, t := range s.targets {
		addAll(t.Models)
		addAll(t.MappedModels)
	}
	for _, r := range s.rules {
		if r.Key == KeyModel || r.Key == KeyModelPrefix {
			probes = append(probes, r.Value)
		}
	}
	addAll(k.Models)
	for _, m := range probes {
		if allow.has([]byte(m)) {
			if _, ok := s.routableOwner(&base, m); ok {
				return true
			}
		}
	}
	return false
}

// nameList renders "key \"a\"", "keys \"a\", \"b\"", or the first five and
// how many more.
func nameList(names []string) string {
	const show = 5
	q := make([]string, 0, show)
	for i, n := range names {
		if i == show {
			break
		}
		q = append(q, strconv.Quote(n))
	}
	s := strings.Join(q, ", ")
	if len(names) > show {
		s += fmt.Sprintf(" and %d more", len(names)-show)
	}
	if len(names) == 1 {
		return "key " + s
	}
	return "keys " + s
}
