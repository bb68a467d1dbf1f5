package router

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// This file holds the reference semantics the compiled Snapshot is checked
// against: a plain, obviously-correct linear evaluation of docs/routing.md, 3, and
// generators of random rule sets and requests shared by the differential
// tests and the benchmarks.

// linearMatch evaluates rules in declared order; the first match wins.
func linearMatch(rules []RuleSpec, r *Request) (int, []int) {
	for i := range rules {
		if linearRuleMatches(&rules[i], r) {
			return i, rules[i].Chain
		}
	}
	return -1, linearFallback
}

// linearFallback is shared so the benchmark baseline does not allocate.
var linearFallback = []int{0}

func linearRuleMatches(rule *RuleSpec, r *Request) bool {
	rich := r.Surface == SurfaceChat || r.Surface == SurfaceCompletions || r.Surface == SurfaceResponses || r.Surface == SurfaceMessages
	switch rule.Key {
	case KeyModel:
		return string(r.Model) == rule.Value
	case KeyModelPrefix:
		// Written out rather than strings.HasPrefix(string(r.Model), ...)
		// so the benchmark baseline does not allocate either.
		return len(r.Model) >= len(rule.Value) && string(r.Model[:len(rule.Value)]) == rule.Value
	case KeyUser:
		return r.HasUser && string(r.User) == rule.Value
	case KeyStream:
		return rich && rule.Value == strconv.FormatBool(r.Stream)
	case KeyHasTools:
		return rich && rule.Value == strconv.FormatBool(r.HasTools)
	case KeyMetadata:
		if !rich {
			return false
		}
		for _, p := range r.Metadata {
			if string(p.Key) == rule.Field && string(p.Value) == rule.Value {
				return true
			}
		}
	}
	return false
}

// linearServes is the reference for ServesModel.
func linearServes(models []string, model string) bool {
	if models == nil {
		return true
	}
	for _, m := range models {
		if p, ok := strings.CutSuffix(m, "*"); ok {
			if strings.HasPrefix(model, p) {
				return true
			}
		} else if m == model {
			return true
		}
	}
	return false
}

// chooser is a source of choices: math/rand for randomized tests, the
// fuzzer's bytes for fuzzing.
type chooser interface {
	intn(n int) int
}

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

// byteChooser consumes fuzz input one byte per choice; exhausted input
// chooses 0, so every input decodes to something.
type byteChooser struct{ b []byte }

func (c *byteChooser) intn(n int) int {
	if len(c.b) == 0 {
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	return v % n
}

// smallString draws a string over a tiny alphabet so that equal values and
// prefixes of each other are common.
func smallString(c chooser, maxLen int) string {
	const alphabet = "ab-"
	n := c.intn(maxLen + 1)
	var sb strings.Builder
	for range n {
		sb.WriteByte(alphabet[c.intn(len(alphabet))])
	}
	return sb.String()
}

var genFields = []string{"tier", "team", "x"}

// genRules draws up to maxRules rules of every kind with chains into
// numTargets targets (no repeats, never empty).
func genRules(c chooser, maxRules, numTargets int) []RuleSpec {
	n := c.intn(maxRules + 1)
	rules := make([]RuleSpec, n)
	for i := range rules {
		r := RuleSpec{Key: Key(c.intn(numKeys))}
		switch r.Key {
		case KeyStream, KeyHasTools:
			r.Value = strconv.FormatBool(c.intn(2) == 1)
		case KeyMetadata:
			r.Field = genFields[c.intn(len(genFields))]
			r.Value = smallString(c, 2)
		case KeyModelPrefix:
			r.Value = smallString(c, 3) // "" included: matches every model
		default:
			r.Value = smallString(c, 4)
		}
		start, length := c.intn(numTargets), 1+c.intn(numTargets)
		for k := range length {
			r.Chain = append(r.Chain, (start+k)%numTargets)
		}
		rules[i] = r
	}
	return rules
}

// genTargets draws 1..maxTargets targets with random surfaces and models
// lists (nil, exact ids, patterns, the bare "*").
func genTargets(c chooser, maxTargets int) []TargetSpec {
	ts := make([]TargetSpec, 1+c.intn(maxTargets))
	for i := range ts {
		t := TargetSpec{
			Name:     "t" + strconv.Itoa(i),
			Provider: []string{"openai", "anthropic", "bedrock"}[c.intn(3)],
			Surfaces: SurfaceSet(c.intn(int(AllSurfaces) + 1)),
		}
		if c.intn(4) != 0 {
			t.Models = []string{}
			for range c.intn(4) {
				m := smallString(c, 4)
				if c.intn(3) == 0 {
					m += "*"
				}
				t.Models = append(t.Models, m)
			}
		}
		if c.intn(3) == 0 {
			t.MappedModels = []string{smallString(c, 4)}
		}
		ts[i] = t
	}
	return ts
}

// genRequest draws a request; user and metadata may be set while HasUser
// is false or the surface ignores metadata, to catch leaks.
func genRequest(c chooser) Request {
	r := Request{
		Surface:  Surface(c.intn(int(NumSurfaces) + 1)), // NumSurfaces: unknown
		Model:    []byte(smallString(c, 5)),
		User:     []byte(smallString(c, 4)),
		HasUser:  c.intn(3) != 0,
		Stream:   c.intn(2) == 1,
		HasTools: c.intn(2) == 1,
	}
	for range c.intn(4) {
		r.Metadata = append(r.Metadata, Pair{
			Key:   []byte(genFields[c.intn(len(genFields))]),
			Value: []byte(smallString(c, 2)),
		})
	}
	return r
}

// linearModels is the reference for Models (docs/api.md, Choices), using linearMatch.
func linearModels(rules []RuleSpec, targets []TargetSpec) []ModelInfo {
	ids := map[string]bool{}
	for _, t := range targets {
		for _, m := range t.Models {
			if !strings.HasSuffix(m, "*") {
				ids[m] = true
			}
		}
		for _, m := range t.MappedModels {
			ids[m] = true
		}
	}
	for _, r := range rules {
		if r.Key == KeyModel {
			ids[r.Value] = true
		}
	}
	out := []ModelInfo{}
	for id := range ids {
	surfaces:
		for x := Surface(0); x < NumSurfaces; x++ {
			_, chain := linearMatch(rules, &Request{Surface: x, Model: []byte(id)})
			for _, t := range chain {
				if targets[t].Surfaces.Has(x) && linearServes(targets[t].Models, id) {
					out = append(out, ModelInfo{ID: id, OwnedBy: targets[t].Provider})
					break surfaces
				}
			}
		}
	}
	return out
}
