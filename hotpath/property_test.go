package hotpath

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The product guarantee, checked on random configurations, faults and
// requests: a request reaches only members of the chain its first matching
// rule names (or targets[0] when none matches) that serve its model and
// surface, in chain order; a non-failover answer is never followed by
// another call; and every request gets exactly one answer whose status
// follows from the last upstream answer (docs/routing.md and docs/api.md, Errors).
//
// The matched rule is computed here by a linear reading of docs/routing.md, 3,
// independently of the router.

const propTargets = 5

var (
	propModels   = []string{"m1", "m2", "p-x", "p-y", "zz"}
	propUsers    = []string{"", "u1", "u2"}
	propMeta     = []string{"", `{"tier":"gold"}`, `{"tier":"silver"}`, `{"n":1.0}`, `{"n":1}`, `{"tier":"gold","n":1}`}
	propSurfaces = []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings"}
)

type propRule struct {
	key, field, value string
	chain             []int
}

type propTarget struct {
	models   []string // nil = any
	attempts int
}

type propConfig struct {
	rules   []propRule
	targets []propTarget
	// gen is part of every api_key, so each new configuration is a new
	// identity with fresh circuits and parks (docs/routing.md, 9); otherwise a few
	// 429s and open circuits would decide most of the run.
	gen int
}

func (pc *propConfig) yaml() string {
	var b strings.Builder
	b.WriteString("server: {request_timeout: 3s}\nstrategy:\n  mode: conditional\n  conditions:\n")
	for _, r := range pc.rules {
		fmt.Fprintf(&b, "    - key: %s\n      value: %q\n", r.key, r.value)
		if r.field != "" {
			fmt.Fprintf(&b, "      field: %s\n", r.field)
		}
		b.WriteString("      target_keys: [")
		for i, t := range r.chain {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "t%d", t)
		}
		b.WriteString("]\n")
	}
	b.WriteString("targets:\n")
	for i, t := range pc.targets {
		fmt.Fprintf(&b, "  - virtual_key: t%d\n    provider: openai\n    base_url: \"{{t%d}}\"\n    api_key: sk-t%d-%d\n", i, i, i, pc.gen)
		// Long enough that an answer is never taken for a timeout on a
		// loaded machine (a 400 read as a timeout would be failed over).
		b.WriteString("    timeout: 400ms\n")
		fmt.Fprintf(&b, "    retry: {attempts: %d, initial_backoff_ms: 1}\n", t.attempts)
		b.WriteString("    circuit_breaker: {failure_threshold: 3, timeout: 300ms}\n")
		if t.models != nil {
			fmt.Fprintf(&b, "    models: [%s]\n", strings.Join(t.models, ", "))
		}
	}
	return b.String()
}

func randomPropConfig(rng *rand.Rand, gen int) *propConfig {
	pc := &propConfig{gen: gen}
	for range propTargets {
		t := propTarget{attempts: 1 + rng.IntN(2)}
		if rng.IntN(3) > 0 {
			t.models = []string{}
			for _, m := range []string{"m1", "m2", "p-x", `"p-*"`} {
				if rng.IntN(2) == 0 {
					t.models = append(t.models, m)
				}
			}
			if len(t.models) == 0 {
				t.models = append(t.models, "m1")
			}
		}
		pc.targets = append(pc.targets, t)
	}
	for range 1 + rng.IntN(6) {
		r := propRule{}
		switch rng.IntN(6) {
		case 0:
			r.key, r.value = "model", propModels[rng.IntN(len(propModels))]
		case 1:
			r.key, r.value = "model_prefix", []string{"p-", "m"}[rng.IntN(2)]
		case 2:
			r.key, r.value = "user", propUsers[1+rng.IntN(2)]
		case 3:
			r.key, r.value = "stream", []string{"true", "false"}[rng.IntN(2)]
		case 4:
			r.key, r.value = "has_tools", []string{"true", "false"}[rng.IntN(2)]
		case 5:
			r.key, r.field, r.value = "metadata", []string{"tier", "n"}[rng.IntN(2)], []string{"gold", "1.0", "1"}[rng.IntN(3)]
		}
		r.chain = rng.Perm(propTargets)[:1+rng.IntN(3)]
		pc.rules = append(pc.rules, r)
	}
	return pc
}

type propRequest struct {
	path, model, user, meta string
	stream, tools           bool
}

func (r propRequest) body() string {
	b := `{"model":"` + r.model + `","messages":[{"role":"user","content":"hi"}],"input":"x","prompt":"x"`
	if r.user != "" {
		b += `,"user":"` + r.user + `"`
	}
	if r.stream {
		b += `,"stream":true`
	}
	if r.tools {
		b += `,"tools":[{"type":"function","function":{"name":"f"}}]`
	}
	return b + "}"
}

// oracle returns the matched rule (-1: none) and its chain, reading docs/routing.md,
// 3 literally.
func (pc *propConfig) oracle(r propRequest) (int, []int) {
	chatLike := r.path != "/v1/embeddings"
	meta := map[string]string{}
	if chatLike && r.meta != "" {
		// The metadata strings above are flat and simple enough to read
		// by hand: values are written as they compare.
		for _, kv := range strings.Split(strings.Trim(r.meta, "{}"), ",") {
			k, v, _ := strings.Cut(kv, ":")
			meta[strings.Trim(k, `"`)] = strings.Trim(v, `"`)
		}
	}
	for i, rule := range pc.rules {
		var ok bool
		switch rule.key {
		case "model":
			ok = r.model == rule.value
		case "model_prefix":
			ok = strings.HasPrefix(r.model, rule.value)
		case "user":
			ok = r.user != "" && r.user == rule.value
		case "stream":
			ok = chatLike && strconv.FormatBool(r.stream) == rule.value
		case "has_tools":
			ok = chatLike && strconv.FormatBool(r.tools) == rule.value
		case "metadata":
			v, present := meta[rule.field]
			ok = chatLike && present && v == rule.value
		}
		if ok {
			return i, rule.chain
		}
	}
	return -1, []int{0}
}

func (pc *propConfig) serves(t int, model string) bool {
	ms := pc.targets[t].models
	if ms == nil {
		return true
	}
	for _, m := range ms {
		if m == model || (m == `"p-*"` && strings.HasPrefix(model, "p-")) {
			return true
		}
	}
	return false
}

// finalStatus is the status the client gets when the walk's last answer
// came from a member with fault f.
func finalStatus(f fault) int {
	switch f {
	case faultNone:
		return 200
	case fault400, faultContextLength:
		return 400
	case fault429:
		return 429
	case faultHang:
		return 504
	}
	return 502 // 503, 408, 401 (auth), reset
}

func TestPropertyOnlyTheMatchedChainIsCalled(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261130, 1))
	log := &callLog{}
	mocks := make([]*mockUpstream, propTargets)
	for i := range mocks {
		mocks[i] = startMock(t, "t"+strconv.Itoa(i))
		mocks[i].log = log
		mocks[i].hang = 1500 * 1e6 // 1.5 s, past the 400 ms attempt timeout
		mocks[i].retryAfter = "1"
	}
	pc := randomPropConfig(rng, 0)
	tg := startGateway(t, pc.yaml(), mocks...)
	faults := make([]fault, propTargets)
	// Hangs cost an attempt timeout each; keep them rarer than the rest.
	faultWeights := []int{24, 3, 2, 2, 2, 2, 2, 1, 2}

	const requests = 300
	stats := map[int]int{}
	for n := range requests {
		if n%25 == 0 && n > 0 {
			pc = randomPropConfig(rng, n)
			tg.reload(pc.yaml(), mocks...)
		}
		if n%10 == 0 {
			for i := range faults {
				faults[i] = pickWeighted(rng, faultWeights)
				mocks[i].setFault(faults[i])
			}
		}
		req := propRequest{
			path:   propSurfaces[rng.IntN(len(propSurfaces))],
			model:  propModels[rng.IntN(len(propModels))],
			user:   propUsers[rng.IntN(len(propUsers))],
			meta:   propMeta[rng.IntN(len(propMeta))],
			stream: rng.IntN(3) == 0,
			tools:  rng.IntN(3) == 0,
		}
		if req.path == "/v1/embeddings" {
			req.stream = false
		}
		rule, chain := pc.oracle(req)
		var cands []int
		for _, m := range chain {
			if pc.serves(m, req.model) {
				cands = append(cands, m)
			}
		}

		hdr := []string{"Authorization", "Bearer client-key"}
		if req.meta != "" {
			hdr = append(hdr, "X-Gateway-Metadata", req.meta)
		}
		mark := log.len()
		r := tg.do("POST", req.path, req.body(), hdr...)
		calls := log.since(mark)
		stats[r.Status]++
		where := fmt.Sprintf("request %d %+v (rule %d, chain %v, candidates %v, faults %v):\n  got %d %s, calls %v",
			n, req, rule, chain, cands, faults, r.Status, r.Body, calls)

		wantRule := "fallback"
		if rule >= 0 {
			wantRule = strconv.Itoa(rule)
		}
		if r.Header["X-Gateway-Rule"] != wantRule {
			t.Fatalf("%s\n  X-Gateway-Rule %q, want %q\n%s", where, r.Header["X-Gateway-Rule"], wantRule, pc.yaml())
		}
		if len(cands) == 0 {
			if r.Status != 404 || len(calls) != 0 {
				t.Fatalf("%s\n  want 404 and no call", where)
			}
			continue
		}
		if got := r.Header["X-Gateway-Attempts"]; got != strconv.Itoa(len(calls)) {
			t.Fatalf("%s\n  X-Gateway-Attempts %q, upstreams saw %d calls", where, got, len(calls))
		}
		// Calls go to candidates only, in chain order, at most `attempts`
		// times each, and end at the first non-failover answer.
		pos, run := -1, 0
		for i, name := range calls {
			ti, _ := strconv.Atoi(strings.TrimPrefix(name, "t"))
			ci := slices.Index(cands, ti)
			if ci < 0 {
				t.Fatalf("%s\n  %s is not a candidate: the worst bug", where, name)
			}
			switch {
			case ci == pos:
				run++
			case ci > pos:
				pos, run = ci, 1
			default:
				t.Fatalf("%s\n  %s called out of chain order", where, name)
			}
			if run > pc.targets[ti].attempts {
				t.Fatalf("%s\n  %s called %d times, attempts is %d", where, name, run, pc.targets[ti].attempts)
			}
			switch faults[ti] {
			case faultNone, fault400, fault401:
				if i != len(calls)-1 {
					t.Fatalf("%s\n  a call followed %s's %v answer", where, name, faults[ti])
				}
			}
		}
		// One answer, with the status the last answer implies.
		if len(calls) == 0 {
			if r.Status != 503 && r.Status != 429 {
				t.Fatalf("%s\n  every candidate skipped: want 503 or 429", where)
			}
			continue
		}
		last, _ := strconv.Atoi(strings.TrimPrefix(calls[len(calls)-1], "t"))
		want := finalStatus(faults[last])
		if r.Header["X-Gateway-Target"] != calls[len(calls)-1] && (want == 200 || pos == len(cands)-1) {
			t.Fatalf("%s\n  X-Gateway-Target %q", where, r.Header["X-Gateway-Target"])
		}
		switch {
		case r.Status == want:
		case pos < len(cands)-1 && (r.Status == 503 || r.Status == 429):
			// Later candidates were skipped (open circuit, park): the
			// walk may report the skip instead.
		default:
			t.Fatalf("%s\n  status %d, want %d", where, r.Status, want)
		}
	}
	t.Logf("statuses over %d requests: %v", requests, stats)
	for _, s := range []int{200, 400, 404, 429, 502, 503, 504} {
		if stats[s] == 0 {
			t.Errorf("no request ended %d: the random mix is too narrow to mean much", s)
		}
	}
}

func pickWeighted(rng *rand.Rand, weights []int) fault {
	total := 0
	for _, w := range weights {
		total += w
	}
	x := rng.IntN(total)
	for i, w := range weights {
		if x < w {
			return fault(i)
		}
		x -= w
	}
	return faultNone
}
