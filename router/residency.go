package router

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Residency proof (docs/residency.md). For a client key with
// residency labels, every target that some request of that key can reach
// must carry one of them. The requests a key can send are infinite, but
// routing only ever compares the request's fields with the values the
// config names, so a finite set of representatives covers them all:
//
//   - models: a model behaves like every other model that equals the same
//     exact id of the config (rules, targets, allow-lists) and has the same
//     longest config prefix (model_prefix values, "prefix*" patterns), so
//     each exact id, each prefix, and each prefix followed by a suffix no
//     config value continues stand for all models;
//   - user and metadata: a rule wins only if no earlier rule matches, and
//     adding a user or a metadata entry can only make more rules match, so
//     the request a rule needs (its user or its one entry, the key's
//     bindings fixed) is the one to try: if it does not win, none does;
//   - stream, has_tools and the surface: every combination.
//
// The proof tries, for each rule (and the fallback) whose chain holds a
// target outside the key's labels, every representative that rule can
// match, and reports an Escape when that rule wins and such a target
// serves the model and surface.
//
// Stored batches (docs/batches.md) are covered by the same search: each
// request inside an uploaded file or a message batch routes as the request
// it describes (its surface, model and fields, the key's bindings), and
// the members it may be stored on are those of that rule's chain that
// serve the model and the surface and take the surface in a batch
// (TargetSpec.Batch, which Compile holds to a subset of Surfaces). A batch
// therefore reaches only targets a request of its surface can reach, and
// every id the gateway hands out is bound to the target that took it.

// Witness is a concrete request a client sends: the fields it chooses. The
// key's bindings (user, metadata) apply on top of it, as in Bind.
type Witness struct {
	Surface Surface
	Model   string
	// User is the body's user when HasUser (only when the key binds none).
	User    string
	HasUser bool
	Stream  bool
	// HasTools is a non-empty tools array.
	HasTools bool
	// Metadata holds the X-Gateway-Metadata entries sent (none bound by
	// the key); nil = no header.
	Metadata []Pair
}

// Request returns w as routing sees it from key k's client: k's bindings
// applied (see Bind).
func (w *Witness) Request(k *KeySpec) Request {
	r := Request{Surface: w.Surface, Model: []byte(w.Model), User: []byte(w.User), HasUser: w.HasUser,
		Stream: w.Stream, HasTools: w.HasTools, Metadata: w.Metadata}
	if k != nil {
		Bind(&r, k, nil)
	}
	return r
}

// String renders w as the HTTP request a client would send, e.g.
// `POST /v1/chat/completions {"model":"gpt-4o","stream":true}`.
func (w *Witness) String() string {
	path := map[Surface]string{
		SurfaceChat: "/v1/chat/completions", SurfaceCompletions: "/v1/completions",
		SurfaceEmbeddings: "/v1/embeddings", SurfaceImages: "/v1/images/generations",
		SurfaceResponses: "/v1/responses", SurfaceMessages: "/v1/messages",
	}[w.Surface]
	body := map[string]any{"model": w.Model}
	if w.Stream {
		body["stream"] = true
	}
	if w.HasTools {
		body["tools"] = []string{"…"}
	}
	if w.HasUser {
		if w.Surface == SurfaceMessages {
			body["metadata"] = map[string]string{"user_id": w.User}
		} else {
			body["user"] = w.User
		}
	}
	b, _ := json.Marshal(body)
	s := "POST " + path + " " + string(b)
	if len(w.Metadata) > 0 {
		s += " with X-Gateway-Metadata " + w.metadataJSON()
	}
	return s
}

func (w *Witness) metadataJSON() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range w.Metadata {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(string(p.Key))
		v, _ := json.Marshal(string(p.Value))
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

// Explain renders the `switchyard explain` command that shows w routed as
// key's client sends it.
func (w *Witness) Explain(key string) string {
	args := []string{"switchyard explain", "-key", shellQuote(key), "-surface", w.Surface.String(), "-model", shellQuote(w.Model)}
	if w.HasUser {
		args = append(args, "-user", shellQuote(w.User))
	}
	if w.Stream {
		args = append(args, "-stream")
	}
	if w.HasTools {
		args = append(args, "-tools")
	}
	if len(w.Metadata) > 0 {
		args = append(args, "-metadata", shellQuote(w.metadataJSON()))
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Escape is a request of a client key with residency that reaches a target
// outside the key's labels.
type Escape struct {
	// Key is the index of the client key.
	Key int
	// Rule is the condition that routes the request; -1 = the fallback.
	Rule int
	// Target is the index of the target reached (a candidate of the
	// rule's chain for the model and surface).
	Target int
	// Request is the request as the key's client sends it.
	Request Witness
}

// Message renders the escape for a validate line (without the key's path).
func (e *Escape) Message(s *Snapshot, keys []KeySpec) string {
	k := &keys[e.Key]
	t := s.targets[e.Target]
	label := "no residency"
	if t.Residency != "" {
		label = "residency " + strconv.Quote(t.Residency)
	}
	via := "the fallback (no condition matches)"
	if e.Rule >= 0 {
		via = fmt.Sprintf("strategy.conditions[%d] (%s)", e.Rule, describeRule(s.rules[e.Rule]))
	}
	return fmt.Sprintf("client key %q (residency %s) can reach target %q (%s) through %s: %s; see %s",
		k.Name, labelList(k.Residency), t.Name, label, via, e.Request.String(), e.Request.Explain(k.Name))
}

func labelList(ls []string) string {
	q := make([]string, len(ls))
	for i, l := range ls {
		q[i] = strconv.Quote(l)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// CheckResidency is the load-time proof: for each key with Residency (in
// key order), one Escape per target outside its labels that some request of
// the key reaches, found in rule order (the fallback first). nil when every
// key's reachable targets carry one of its labels. An error means the
// input is one Compile refuses.
func CheckResidency(rules []RuleSpec, targets []TargetSpec, keys []KeySpec) ([]Escape, error) {
	s, err := Compile(rules, targets, 0)
	if err != nil {
		return nil, err
	}
	reps, err := s.modelReps(keys)
	if err != nil {
		return nil, err
	}
	var out []Escape
	for i := range keys {
		if keys[i].Residency == nil {
			continue
		}
		outside := make([]bool, len(s.targets))
		for t := range s.targets {
			outside[t] = !slices.Contains(keys[i].Residency, s.targets[t].Residency)
		}
		s.reach(&keys[i], reps, outside, func(j, t int, w Witness) bool {
			out = append(out, Escape{Key: i, Rule: j, Target: t, Request: w})
			outside[t] = false // one escape per target
			return false
		})
	}
	return out, nil
}

// Reach is one (rule, target) pair a key's requests can reach, with a
// request that does.
type Reach struct {
	Rule, Target int
	Request      Witness
}

// Reachable returns every (rule, target) pair that some request of key k
// reaches (the target a candidate of the rule's chain for the model and
// surface), in rule order (the fallback, Rule -1, first), then chain order.
// KeyReach is its over-approximating sibling; its comment says why both.
func (s *Snapshot) Reachable(k *KeySpec) []Reach {
	all := make([]bool, len(s.targets))
	for t := range all {
		all[t] = true
	}
	var out []Reach
	reps, err := s.modelReps([]KeySpec{*k})
	if err != nil {
		return nil
	}
	s.reach(k, reps, all, func(j, t int, w Witness) bool {
		out = append(out, Reach{Rule: j, Target: t, Request: w})
		return false
	})
	return out
}

// reach calls found(rule, target, witness) for the rules (fallback first)
// whose chain holds a target marked in want and that a request of k can
// win with such a target a candidate; once per (rule, target) pair, the
// first witness found. found may clear want entries; it returns true to
// stop looking at the current rule.
func (s *Snapshot) reach(k *KeySpec, reps []string, want []bool, found func(j, t int, w Witness) bool) {
	allow := compileModelSet(k.Models)
	var allowed []string
	if k.Models == nil {
		allowed = reps
	} else {
		for _, m := range reps {
			if allow.has([]byte(m)) {
				allowed = append(allowed, m)
			}
		}
	}
	// A rule every request of k matches (its bound user's rule; on
	// chat-like surfaces also its bound metadata entries' rules and a
	// stream or has_tools pair) is won before any later rule can be: only
	// rules up to it need trying, and the fallback only without one.
	limitAll := noRule
	if v, ok := s.users[string(k.User)]; k.HasUser && ok {
		limitAll = v
	}
	limitRich := min(limitAll, max(s.stream[0], s.stream[1]), max(s.tools[0], s.tools[1]))
	for _, p := range k.Metadata {
		if v, ok := s.meta[string(p.Key)][string(p.Value)]; ok && v < limitRich {
			limitRich = v
		}
	}
	var buf []Pair
	for j := -1; j < len(s.rules); j++ {
		plain, rich := int32(j) <= limitAll, int32(j) <= limitRich
		if j < 0 {
			plain, rich = limitAll == noRule, limitRich == noRule
		}
		if !plain && !rich {
			if j >= 0 {
				break // every later rule comes after the limits too
			}
			continue
		}
		chain := s.fallback
		if j >= 0 {
			chain = s.rules[j].Chain
		}
		if !slices.ContainsFunc(chain, func(t int) bool { return want[t] }) {
			continue
		}
		w := Witness{}
		var models []string
		if j < 0 {
			models = allowed
		} else {
			r := s.rules[j]
			switch r.Key {
			case KeyModel:
				if !allow.has([]byte(r.Value)) {
					continue
				}
				models = []string{r.Value}
			case KeyModelPrefix:
				for _, m := range allowed {
					if strings.HasPrefix(m, r.Value) {
						models = append(models, m)
					}
				}
			case KeyUser:
				if k.HasUser {
					if string(k.User) != r.Value {
						continue
					}
				} else {
					w.User, w.HasUser = r.Value, true
				}
				models = allowed
			case KeyMetadata:
				if v, bound := boundValue(k.Metadata, r.Field); bound {
					if v != r.Value {
						continue
					}
				} else {
					w.Metadata = []Pair{{Key: []byte(r.Field), Value: []byte(r.Value)}}
				}
				models = allowed
			default:
				models = allowed
			}
			chain = s.rules[j].Chain
		}
		s.reachRule(k, j, chain, models, w, want, plain, rich, &buf, found)
	}
}

// reachRule is reach for one rule j with chain, trying models with the
// user and metadata of base.
func (s *Snapshot) reachRule(k *KeySpec, j int, chain []int, models []string, base Witness, want []bool, plain, rich bool, buf *[]Pair, found func(j, t int, w Witness) bool) {
	seen := make(map[int]bool)
	for _, m := range models {
		mb := []byte(m)
		for x := Surface(0); x < NumSurfaces; x++ {
			if x.ChatLike() && !rich || !x.ChatLike() && !plain {
				continue // an earlier rule wins there (see reach)
			}
			wanted := false
			for _, t := range chain {
				if want[t] && !seen[t] && s.ServesModel(t, mb) && s.ServesSurface(t, x) {
					wanted = true
					break
				}
			}
			if !wanted {
				continue
			}
			combos := 1
			if x.ChatLike() {
				combos = 4
			}
			for c := 0; c < combos; c++ {
				w := base
				w.Surface, w.Model, w.Stream, w.HasTools = x, m, c&1 != 0, c&2 != 0
				if !x.ChatLike() {
					w.Metadata = nil // ignored there: a metadata rule cannot win
				}
				req := Request{Surface: x, Model: mb, User: []byte(w.User), HasUser: w.HasUser,
					Stream: w.Stream, HasTools: w.HasTools, Metadata: w.Metadata}
				*buf = Bind(&req, k, *buf)
				if got, _ := s.Match(&req); got != j {
					continue
				}
				for _, t := range chain {
					if want[t] && !seen[t] && s.ServesModel(t, mb) && s.ServesSurface(t, x) {
						seen[t] = true
						w.Metadata = slices.Clone(w.Metadata)
						if found(j, t, w) {
							return
						}
					}
				}
			}
		}
	}
}

func boundValue(bound []Pair, field string) (string, bool) {
	for _, p := range bound {
		if string(p.Key) == field {
			return string(p.Value), true
		}
	}
	return "", false
}

// modelReps returns representatives of every class of models routing and
// keys' allow-lists can tell apart (see the comment at the top of this
// file): each exact id, each prefix, and each prefix (the empty one
// included) followed by a suffix that no exact id or longer prefix
// continues. Sorted, no duplicates.
func (s *Snapshot) modelReps(keys []KeySpec) ([]string, error) {
	exact := map[string]bool{}
	prefixes := map[string]bool{}
	add := func(models []string) {
		for _, m := range models {
			if isPattern(m) {
				prefixes[strings.TrimSuffix(m, "*")] = true
			} else {
				exact[m] = true
			}
		}
	}
	for _, t := range s.targets {
		add(t.Models)
	}
	for _, r := range s.rules {
		switch r.Key {
		case KeyModel:
			exact[r.Value] = true
		case KeyModelPrefix:
			prefixes[r.Value] = true
		}
	}
	for i := range keys {
		add(keys[i].Models)
	}
	out := map[string]bool{}
	for m := range exact {
		out[m] = true
	}
	for p := range prefixes {
		out[p] = true
	}
	bases := append([]string{""}, slices.Collect(maps.Keys(prefixes))...)
	for _, q := range bases {
		m, ok := unlisted(q, exact, prefixes)
		if !ok {
			return nil, fmt.Errorf("router: cannot prove residency: the config's model ids and prefixes continue %q with every byte", q)
		}
		out[m] = true
	}
	return slices.Sorted(maps.Keys(out)), nil
}

// unlisted returns a model starting with q that is no exact id and whose
// longest prefix among prefixes is q ("" when none is), preferring a
// readable one; ok is false when every such model is listed.
func unlisted(q string, exact, prefixes map[string]bool) (string, bool) {
	fits := func(m string) bool {
		if exact[m] {
			return false
		}
		for p := range prefixes {
			if len(p) > len(q) && strings.HasPrefix(m, p) {
				return false
			}
		}
		return true
	}
	// Readable first: a witness is printed for people to run.
	for _, suf := range []string{"-unlisted", "unlisted-model", "x", "-x", "_", ".", "~"} {
		if fits(q + suf) {
			return q + suf, true
		}
	}
	for b := 0; b < 256; b++ {
		for _, end := range []string{"", "x", "\x00"} {
			if m := q + string([]byte{byte(b)}) + end; fits(m) {
				return m, true
			}
		}
	}
	return "", false
}
