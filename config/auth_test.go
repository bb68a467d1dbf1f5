package config

import (
	"crypto/sha256"
	"os"
	"strings"
	"testing"
)

const authBase = `strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
targets:
  - {virtual_key: a, provider: openai, base_url: "https://api.openai.com/v1"}
`

const digestA = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb" // SHA-256 of "a"

func TestAuthLoads(t *testing.T) {
	src := authBase + `auth:
  keys:
    - name: acme
      sha256: ` + strings.ToUpper(digestA) + `
      user: acme
      metadata: {tier: gold, n: 1.0, eu: true}
      models: [gpt-4o, "claude-*"]
    - name: env
      key: ${CLIENT_KEY}
`
	cfg := mustParse(t, src, envOf(map[string]string{"CLIENT_KEY": "sy-secret"}))
	if !cfg.Auth.Enabled() || len(cfg.Auth.Keys) != 2 {
		t.Fatalf("keys %+v", cfg.Auth.Keys)
	}
	a, e := cfg.Auth.Keys[0], cfg.Auth.Keys[1]
	if a.Digest != sha256.Sum256([]byte("a")) || a.User != "acme" || a.Line != 9 {
		t.Errorf("acme: %+v", a)
	}
	if a.Metadata["tier"] != "gold" || a.Metadata["n"] != "1.0" || a.Metadata["eu"] != "true" || len(a.Metadata) != 3 {
		t.Errorf("metadata kept as written: %v", a.Metadata)
	}
	if e.Digest != sha256.Sum256([]byte("sy-secret")) {
		t.Errorf("key: is hashed at load")
	}
	// No part of the Config holds the key in clear.
	if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(
		strings.Join([]string{e.Name, e.User, strings.Join(e.Models, "")}, ""), "\n", ""), " ", ""), "sy-secret") {
		t.Error("the key is kept")
	}
	specs := cfg.KeySpecs()
	if len(specs) != 2 || string(specs[0].Metadata[0].Key) != "eu" || !specs[0].HasUser || specs[1].HasUser || specs[1].Models != nil {
		t.Errorf("specs %+v", specs)
	}
	if cfg := mustParse(t, authBase, noEnv); cfg.Auth.Enabled() || cfg.KeySpecs() != nil {
		t.Error("no auth block: open")
	}
}

func TestAuthProblems(t *testing.T) {
	cases := []struct {
		name, auth string
		env        map[string]string
		want       []want
	}{
		{"empty block", "auth: {}\n", nil, []want{{"auth.keys", 7, "{}",
			"no client keys; want at least one key under auth.keys, or no auth block to serve without keys"}}},
		{"unknown key", "auth:\n  keys:\n    - {name: a, sha256: " + digestA + ", usr: x}\n", nil, []want{{"auth.keys[0].usr", 9, "usr",
			`unknown key "usr" in a client key; want name, sha256, key, user, metadata, models, limits, residency`}}},
		{"no name, no key", "auth:\n  keys:\n    - {user: x}\n", nil, []want{
			{"auth.keys[0].sha256", 9, "{", "no key; want sha256: <64 hex digits of the key's SHA-256> (see switchyard keys new) or key: ${ENV_VAR}"},
			{"auth.keys[0].name", 9, "{", "name is required; want a unique label for logs and metrics"}}},
		{"both", "auth:\n  keys:\n    - name: a\n      sha256: " + digestA + "\n      key: a\n", nil, []want{{"auth.keys[0].key", 11, "a",
			"both sha256 and key are set; want exactly one (sha256 keeps the key out of the file)"}}},
		{"bad digest", "auth:\n  keys:\n    - {name: a, sha256: abc}\n", nil, []want{{"auth.keys[0].sha256", 9, "abc",
			"sha256 is not 64 hex digits (got 3 characters); want the hex SHA-256 of the key, as switchyard keys hash prints"}}},
		{"same digest twice", "auth:\n  keys:\n    - {name: a, sha256: " + digestA + "}\n    - {name: b, key: a}\n", nil, []want{
			{"auth.keys[1].key", 10, "@@a", "the same key as auth.keys[0] (a, line 9); want one key per client, so names and bindings are unambiguous"}}},
		{"duplicate name", "auth:\n  keys:\n    - {name: a, key: x1}\n    - {name: a, key: x2}\n", nil, []want{
			{"auth.keys[1].name", 10, "a,", `duplicate name "a" (first at auth.keys[0], line 9); want unique names`}}},
		{"control name", "auth:\n  keys:\n    - {name: \"a\\nb\", key: x1}\n", nil, []want{
			{"auth.keys[0].name", 9, `"a`, "name has control characters or is over 128 bytes; want a short label for logs and metrics"}}},
		{"unset env", "auth:\n  keys:\n    - {name: a, key: \"${NOPE}\"}\n", nil, []want{
			{"auth.keys[0].key", 9, `"${NOPE}"`, "environment variable NOPE is not set; set it, or write ${NOPE:-} for an empty default"}}},
		{"empty env", "auth:\n  keys:\n    - {name: a, key: \"${K}\"}\n", map[string]string{"K": ""}, []want{
			{"auth.keys[0].key", 9, `"${K}"`, "key is empty; want the client key (usually ${ENV_VAR}) or sha256"}}},
		{"spaces in key", "auth:\n  keys:\n    - {name: a, key: \"${K}\"}\n", map[string]string{"K": "sy-x "}, []want{
			{"auth.keys[0].key", 9, `"${K}"`, "key has spaces or control characters; want a key a client can send in a header (see switchyard keys new)"}}},
		{"bindings", "auth:\n  keys:\n    - name: a\n      key: k\n      user: \"\"\n      metadata: {tier: [x], \"\": y}\n      models: []\n", nil, []want{
			{"auth.keys[0].user", 11, `""`, "user is empty; want the user routing sees for this key, or no user to leave it unbound"},
			{`auth.keys[0].metadata["tier"]`, 12, "[x]", "got a list; want a string, number or boolean"},
			{`auth.keys[0].metadata[""]`, 12, `""`, "metadata entry name is empty; want the X-Gateway-Metadata entry name"},
			{"auth.keys[0].models", 13, "[]", "models is empty, so the key could use no model; omit models to allow any model, or list model ids"}}},
		{"bad pattern", "auth:\n  keys:\n    - {name: a, key: k, models: [\"g*t\"]}\n", nil, []want{
			{"auth.keys[0].models[0]", 9, `"g*t"`, `"g*t" has * before its end; want an exact model id or a prefix ending in a single *`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := authBase + c.auth
			env := noEnv
			if c.env != nil {
				env = envOf(c.env)
			}
			checkProblems(t, src, problemsOf(t, src, env), c.want)
		})
	}
}

// TestAuthProblemsQuoteNoKey: a key that fails to load is never quoted.
func TestAuthProblemsQuoteNoKey(t *testing.T) {
	src := authBase + "auth:\n  keys:\n    - {name: a, key: \"sy-topsecret ${X\"}\n"
	for _, p := range problemsOf(t, src, noEnv) {
		if strings.Contains(p.String(), "topsecret") {
			t.Errorf("problem quotes the key: %s", p)
		}
	}
}

// TestExampleAuthBlockLoads: the commented auth block of config.example.yaml
// loads once uncommented.
func TestExampleAuthBlockLoads(t *testing.T) {
	data, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "# auth:"):
			in = true
		case in && !strings.HasPrefix(line, "#"):
			in = false
		}
		if in {
			block = append(block, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
		}
	}
	if len(block) < 3 {
		t.Fatalf("no commented auth block in config.example.yaml")
	}
	cfg, err := Parse("config.example.yaml", []byte(string(data)+"\n"+strings.Join(block, "\n")+"\n"), noEnv)
	if err != nil {
		t.Fatalf("uncommented auth block: %v\n%s", err, strings.Join(block, "\n"))
	}
	if len(cfg.Auth.Keys) < 2 {
		t.Errorf("example keys: %+v", cfg.Auth.Keys)
	}
}
