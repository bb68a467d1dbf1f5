package router

import "strings"

// ModelReach is one (rule, target, models) a client key's requests can reach.
type ModelReach struct {
	// Rule is the condition whose chain holds Target, or -1 for the
	// no-match fallback.
	Rule int
	// Target is the target's index.
	Target int
	// Model is the models the key can send there: an exact id, or a
	// "prefix*" pattern ("*" = any model).
	Model string
}

// KeyReach lists what key k's requests can reach: for every rule some
// request of k can match (bound fields fixed, unbound fields any value,
// models within k's allow-list) and for the fallback, each chain member
// and the models it serves there. It over-approximates (an earlier rule
// that would always win is not subtracted), which is the safe side for a
// check that every reachable target has something, such as a price.
// Sorted by rule (fallback last), then chain order; no duplicates.
//
// Reachable (residency.go) is the exact counterpart, and neither can stand
// in for the other: Reachable stops at one witness request per (rule,
// target) pair, while the price check must see every model pattern that
// reaches a target (to name the unpriced one); and KeyReach's
// over-approximation, safe for a missing price, would report escapes that
// no request can make if the residency proof used it.
func (s *Snapshot) KeyReach(k *KeySpec) []ModelReach {
	allow := patternsOf(k.Models)
	var out []ModelReach
	seen := map[ModelReach]bool{}
	add := func(rule int, chain []int, models []string) {
		for _, t := range chain {
			for _, m := range intersect(models, patternsOf(s.targets[t].Models)) {
				r := ModelReach{Rule: rule, Target: t, Model: m}
				if !seen[r] && s.servesSomeSurface(t) {
					seen[r] = true
					out = append(out, r)
				}
			}
		}
	}
	for j, r := range s.rules {
		models := allow
		switch r.Key {
		case KeyModel:
			models = intersect(allow, []string{r.Value})
		case KeyModelPrefix:
			models = intersect(allow, []string{r.Value + "*"})
		case KeyUser:
			if k.HasUser && string(k.User) != r.Value {
				continue
			}
		case KeyMetadata:
			if v, bound := boundValue(k.Metadata, r.Field); bound && v != r.Value {
				continue
			}
		}
		add(j, r.Chain, models)
	}
	add(-1, s.fallback, allow)
	return out
}

func (s *Snapshot) servesSomeSurface(t int) bool { return s.targets[t].Surfaces != 0 }

// patternsOf returns a models list as patterns: nil (any model) is ["*"].
func patternsOf(models []string) []string {
	if models == nil {
		return []string{"*"}
	}
	return models
}

// intersect returns the patterns of the model ids both a and b admit.
func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			if m, ok := meet(x, y); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// meet is the intersection of two patterns (exact ids or prefix*), when
// it is not empty.
func meet(x, y string) (string, bool) {
	xp, yp := isPattern(x), isPattern(y)
	xs, ys := strings.TrimSuffix(x, "*"), strings.TrimSuffix(y, "*")
	switch {
	case !xp && !yp:
		return x, x == y
	case xp && !yp:
		return y, strings.HasPrefix(y, xs)
	case !xp && yp:
		return x, strings.HasPrefix(x, ys)
	case strings.HasPrefix(xs, ys):
		return x, true
	case strings.HasPrefix(ys, xs):
		return y, true
	}
	return "", false
}
