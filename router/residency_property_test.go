package router

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestResidencyProofMatchesOracle checks the residency proof against brute
// force: random configs with residency labels and random keys with
// bindings and allow-lists. The oracle sends every request a client could
// send over a small alphabet (every model up to one character longer than
// any the config names, every user and metadata value the config names
// plus a fresh one, every surface, stream and tools combination), and
// records each (key, target) some request reaches outside the key's labels.
// The proof must report exactly those pairs, and each witness must really
// route there.
func TestResidencyProofMatchesOracle(t *testing.T) {
	n := 400
	if testing.Short() || raceEnabled {
		n = 120
	}
	rng := rand.New(rand.NewPCG(22, 9))
	escapes, clean := 0, 0
	for i := range n {
		rules, targets, keys := randomResidencyConfig(rng)
		got, err := CheckResidency(rules, targets, keys)
		if err != nil {
			t.Fatalf("config %d: %v", i, err)
		}
		s, err := Compile(rules, targets, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := oracleEscapes(s, keys)
		gotPairs := map[[2]int]bool{}
		for _, e := range got {
			gotPairs[[2]int{e.Key, e.Target}] = true
			// The witness really reaches e.Target through e.Rule.
			req := e.Request.Request(&keys[e.Key])
			allow := NewModelSet(keys[e.Key].Models)
			if !allow.Has(req.Model) {
				t.Fatalf("config %d: witness %s: model outside the key's allow-list", i, e.Request.String())
			}
			j, chain := s.Match(&req)
			if j != e.Rule || !slices.Contains(chain, e.Target) || !s.ServesModel(e.Target, req.Model) || !s.ServesSurface(e.Target, req.Surface) {
				t.Fatalf("config %d: witness %s for key %d: routes to rule %d chain %v; the proof said rule %d target %d",
					i, e.Request.String(), e.Key, j, chain, e.Rule, e.Target)
			}
			if slices.Contains(keys[e.Key].Residency, targets[e.Target].Residency) {
				t.Fatalf("config %d: escape to target %d whose label %q is the key's", i, e.Target, targets[e.Target].Residency)
			}
		}
		if len(gotPairs) != len(got) {
			t.Fatalf("config %d: a (key, target) pair reported twice: %+v", i, got)
		}
		for p := range want {
			if !gotPairs[p] {
				t.Fatalf("config %d: the oracle finds key %d reaching target %d (%s); the proof does not\nrules %+v\ntargets %+v\nkeys %+v",
					i, p[0], p[1], want[p], rules, targets, keys)
			}
		}
		for p := range gotPairs {
			if _, ok := want[p]; !ok {
				t.Fatalf("config %d: the proof reports key %d reaching target %d; the oracle finds no such request", i, p[0], p[1])
			}
		}
		if len(want) > 0 {
			escapes++
		} else {
			clean++
		}
	}
	// Both answers must be common, or the property says little.
	if escapes < n/10 || clean < n/10 {
		t.Fatalf("generator is lopsided: %d configs refused, %d accepted", escapes, clean)
	}
	t.Logf("%d configs refused, %d accepted", escapes, clean)
}

// oracleEscapes returns every (key, target) pair that some request of a
// key with residency reaches outside its labels, with one such request.
func oracleEscapes(s *Snapshot, keys []KeySpec) map[[2]int]string {
	out := map[[2]int]string{}
	models := []string{""}
	for l := 1; l <= 3; l++ {
		models = appendStrings(models, l, "abc")
	}
	users := []*string{nil}
	for _, u := range []string{"a", "b", "c"} {
		users = append(users, &u)
	}
	vals := []*string{nil}
	for _, v := range []string{"a", "b", "c"} {
		vals = append(vals, &v)
	}
	var buf []Pair
	for ki := range keys {
		k := &keys[ki]
		if k.Residency == nil {
			continue
		}
		allow := NewModelSet(k.Models)
		for _, m := range models {
			if !allow.Has([]byte(m)) {
				continue // 403 model_not_allowed: never routed
			}
			for _, u := range users {
				for _, fv := range vals {
					for _, gv := range vals {
						var md []Pair
						if fv != nil {
							md = append(md, Pair{Key: []byte("f"), Value: []byte(*fv)})
						}
						if gv != nil {
							md = append(md, Pair{Key: []byte("g"), Value: []byte(*gv)})
						}
						for x := Surface(0); x < NumSurfaces; x++ {
							for c := 0; c < 4; c++ {
								req := Request{Surface: x, Model: []byte(m), Stream: c&1 != 0, HasTools: c&2 != 0, Metadata: md}
								if u != nil {
									req.User, req.HasUser = []byte(*u), true
								}
								buf = Bind(&req, k, buf)
								_, chain := s.Match(&req)
								for _, t := range chain {
									if !s.ServesModel(t, []byte(m)) || !s.ServesSurface(t, x) {
										continue
									}
									if !slices.Contains(k.Residency, s.targets[t].Residency) {
										if _, ok := out[[2]int{ki, t}]; !ok {
											out[[2]int{ki, t}] = fmt.Sprintf("%s model %q user %v meta %v stream %v tools %v", x, m, u != nil, md, req.Stream, req.HasTools)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

func appendStrings(out []string, l int, alphabet string) []string {
	if l == 0 {
		return append(out, "")
	}
	for _, p := range appendStrings(nil, l-1, alphabet) {
		for _, c := range alphabet {
			out = append(out, p+string(c))
		}
	}
	return out
}

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

// randomResidencyConfig returns a small random config over the alphabet
// {a, b}: 2-4 labelled targets, 0-5 rules, 1-3 keys.
func randomResidencyConfig(rng *rand.Rand) ([]RuleSpec, []TargetSpec, []KeySpec) {
	surfaces := []SurfaceSet{
		AllSurfaces &^ (1 << SurfaceMessages),      // openai
		1<<SurfaceChat | 1<<SurfaceMessages,        // anthropic
		1 << SurfaceChat,                           // bedrock
		1<<SurfaceChat | 1<<SurfaceEmbeddings,      // gemini
		1<<SurfaceResponses | 1<<SurfaceEmbeddings, // some other mix
	}
	modelLists := [][]string{nil, nil, {"a"}, {"a*"}, {"b", "ab"}, {"*"}, {"ab", "b*"}, {"aa"}, {"b*"}, {"a*", "b"}}
	nt := 2 + rng.IntN(3)
	targets := make([]TargetSpec, nt)
	for i := range targets {
		targets[i] = TargetSpec{Name: fmt.Sprintf("t%d", i), Surfaces: pick(rng, surfaces...),
			Models: slices.Clone(pick(rng, modelLists...)), Residency: pick(rng, "eu", "eu", "us", "")}
	}
	nr := rng.IntN(6)
	rules := make([]RuleSpec, nr)
	for i := range rules {
		r := RuleSpec{Key: Key(rng.IntN(numKeys))}
		switch r.Key {
		case KeyModel, KeyModelPrefix:
			r.Value = pick(rng, "a", "b", "aa", "ab", "ba", "bb")
		case KeyUser:
			r.Value = pick(rng, "a", "b")
		case KeyStream, KeyHasTools:
			r.Value = pick(rng, "true", "false")
		case KeyMetadata:
			r.Field, r.Value = pick(rng, "f", "g"), pick(rng, "a", "b")
		}
		perm := rng.Perm(nt)
		r.Chain = perm[:1+rng.IntN(min(nt, 3))]
		rules[i] = r
	}
	nk := 1 + rng.IntN(3)
	keys := make([]KeySpec, nk)
	for i := range keys {
		k := KeySpec{Name: fmt.Sprintf("k%d", i)}
		switch rng.IntN(4) {
		case 0:
		case 1:
			k.Residency = []string{"eu"}
		case 2:
			k.Residency = []string{"us"}
		default:
			k.Residency = []string{"eu", "us"}
		}
		if rng.IntN(2) == 0 {
			k.User, k.HasUser = []byte(pick(rng, "a", "b", "c")), true
		}
		if rng.IntN(3) == 0 {
			k.Metadata = []Pair{{Key: []byte(pick(rng, "f", "g")), Value: []byte(pick(rng, "a", "b", "c"))}}
		}
		k.Models = slices.Clone(pick(rng, nil, nil, []string{"a"}, []string{"ab", "b*"}, []string{"a*"}, []string{"b*"}))
		keys[i] = k
	}
	return rules, targets, keys
}
