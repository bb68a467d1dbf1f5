package hotpath

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/upstream"
)

// The client key guarantee, on random keys, rules and requests: the rule a
// request matches is the one the key's identity selects — the bound user
// and metadata entries, whatever the request claims, and the request's own
// fields where the key binds nothing — and a model outside the key's
// allow-list is refused before routing (docs/client-keys.md). The expected rule is
// computed here from a plain reading of docs/routing.md, 3 and docs/client-keys.md, independently of
// router.Bind and router.Match.
//
// No upstream is needed: every target serves only "unserved", so each
// routed request ends in a 404 that still names the matched rule in
// X-Gateway-Rule.

var (
	akUsers  = []string{"u1", "u2", "vip"}
	akFields = []string{"tier", "region"}
	akValues = []string{"gold", "eu", "1"}
	akModels = []string{"m1", "m2", "p-x"}
)

type akKey struct {
	user   string            // "" = unbound
	meta   map[string]string // bound entries
	models []string          // nil = any
}

type akRule struct{ key, field, value string }

func (k *akKey) allows(model string) bool {
	if k.models == nil {
		return true
	}
	for _, m := range k.models {
		if m == model || strings.HasSuffix(m, "*") && strings.HasPrefix(model, strings.TrimSuffix(m, "*")) {
			return true
		}
	}
	return false
}

func akYAML(rules []akRule, keys []akKey) string {
	var b strings.Builder
	b.WriteString("strategy:\n  mode: conditional\n  conditions:\n")
	for _, r := range rules {
		fmt.Fprintf(&b, "    - {key: %s, value: %q, target_key: t1", r.key, r.value)
		if r.field != "" {
			fmt.Fprintf(&b, ", field: %s", r.field)
		}
		b.WriteString("}\n")
	}
	b.WriteString("targets:\n")
	for _, t := range []string{"t0", "t1"} {
		fmt.Fprintf(&b, "  - {virtual_key: %s, provider: openai, base_url: \"http://127.0.0.1:1/v1\", models: [unserved]}\n", t)
	}
	b.WriteString("auth:\n  keys:\n")
	for i, k := range keys {
		fmt.Fprintf(&b, "    - name: k%d\n      key: sy-key-%d\n", i, i)
		if k.user != "" {
			fmt.Fprintf(&b, "      user: %s\n", k.user)
		}
		if len(k.meta) > 0 {
			b.WriteString("      metadata: {")
			first := true
			for f, v := range k.meta {
				if !first {
					b.WriteString(", ")
				}
				first = false
				fmt.Fprintf(&b, "%s: %q", f, v)
			}
			b.WriteString("}\n")
		}
		if k.models != nil {
			var q []string
			for _, m := range k.models {
				q = append(q, strconv.Quote(m))
			}
			fmt.Fprintf(&b, "      models: [%s]\n", strings.Join(q, ", "))
		}
	}
	return b.String()
}

// akExpect returns the status and X-Gateway-Rule the request must get.
func akExpect(rules []akRule, k *akKey, chat bool, model, user string, header map[string]string) (int, string) {
	if !k.allows(model) {
		return 403, ""
	}
	if k.user != "" {
		user = k.user
	}
	meta := map[string]string{}
	for f, v := range header {
		meta[f] = v
	}
	for f, v := range k.meta {
		meta[f] = v
	}
	for i, r := range rules {
		var ok bool
		switch r.key {
		case "model":
			ok = model == r.value
		case "user":
			ok = user != "" && user == r.value
		case "metadata":
			v, present := meta[r.field]
			ok = chat && present && v == r.value
		}
		if ok {
			return 404, strconv.Itoa(i)
		}
	}
	return 404, "fallback"
}

func TestPropertyKeysDecideTheIdentity(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	configs, perConfig := 40, 60
	if testing.Short() {
		configs = 10
	}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	for c := range configs {
		var rules []akRule
		for range 1 + rng.IntN(6) {
			switch rng.IntN(3) {
			case 0:
				rules = append(rules, akRule{key: "model", value: pick(akModels)})
			case 1:
				rules = append(rules, akRule{key: "user", value: pick(akUsers)})
			default:
				rules = append(rules, akRule{key: "metadata", field: pick(akFields), value: pick(akValues)})
			}
		}
		keys := make([]akKey, 1+rng.IntN(5))
		for i := range keys {
			k := &keys[i]
			if rng.IntN(2) == 0 {
				k.user = pick(akUsers)
			}
			k.meta = map[string]string{}
			for _, f := range akFields {
				if rng.IntN(2) == 0 {
					k.meta[f] = pick(akValues)
				}
			}
			if rng.IntN(3) == 0 {
				k.models = []string{pick(akModels)}
				if rng.IntN(2) == 0 {
					k.models = append(k.models, "p-*")
				}
				k.models = slices.Compact(k.models)
			}
		}
		yaml := akYAML(rules, keys)
		st, err := Build(mustParse(t, yaml), upstream.NewPool(), time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		g := New(st)
		for range perConfig {
			ki := rng.IntN(len(keys) + 1) // len(keys): an unknown key
			model, user := pick(akModels), ""
			if rng.IntN(2) == 0 {
				user = pick(akUsers)
			}
			header := map[string]string{}
			for _, f := range akFields {
				if rng.IntN(2) == 0 {
					header[f] = pick(akValues)
				}
			}
			chat := rng.IntN(4) > 0
			path := "/v1/embeddings"
			body := `{"model":"` + model + `","input":"x"`
			if chat {
				path = "/v1/chat/completions"
				body = `{"model":"` + model + `","messages":[]`
			}
			if user != "" {
				body += `,"user":"` + user + `"`
			}
			hdrs := ""
			if len(header) > 0 {
				var parts []string
				for f, v := range header {
					parts = append(parts, strconv.Quote(f)+":"+strconv.Quote(v))
				}
				hdrs += "X-Gateway-Metadata: {" + strings.Join(parts, ",") + "}\r\n"
			}
			secret := "sy-key-" + strconv.Itoa(ki)
			if rng.IntN(2) == 0 {
				hdrs += "Authorization: Bearer " + secret + "\r\n"
			} else {
				hdrs += "x-api-key: " + secret + "\r\n"
			}
			var req fasthttp.Request
			if err := parseRequest(t, &req, path, hdrs, []byte(body+"}")); err != nil {
				t.Fatal(err)
			}
			var rc fasthttp.RequestCtx
			rc.Init(&req, nil, nil)
			g.Handler(&rc)
			status, rule := 401, ""
			if ki < len(keys) {
				status, rule = akExpect(rules, &keys[ki], chat, model, user, header)
			}
			gotRule := string(rc.Response.Header.Peek("X-Gateway-Rule"))
			if rc.Response.StatusCode() != status || gotRule != rule {
				t.Fatalf("config %d:\n%s\nkey %d %s %s metadata %q: got %d rule %q, want %d rule %q: %s",
					c, yaml, ki, req.URI().Path(), req.Body(), req.Header.Peek("X-Gateway-Metadata"),
					rc.Response.StatusCode(), gotRule, status, rule, rc.Response.Body())
			}
		}
	}
}
