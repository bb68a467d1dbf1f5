package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/config"
)

func TestKeysNew(t *testing.T) {
	code, out, errOut := run(t, "keys", "new", "-name", "acme")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	ls := lines(out)
	key := ls[0]
	if !strings.HasPrefix(key, "sy-") || len(key) != 3+43 {
		t.Fatalf("key %q; want sy- and 43 base64url characters (32 bytes)", key)
	}
	sum := sha256.Sum256([]byte(key))
	if want := `  sha256: ` + hex.EncodeToString(sum[:]); ls[len(ls)-1] != want || ls[len(ls)-2] != `- name: "acme"` {
		t.Errorf("entry %q; want the name and %q", ls[len(ls)-2:], want)
	}
	// The entry, under auth.keys, loads and admits the key.
	src := "strategy: {mode: conditional, conditions: [{key: model, value: m, target_key: a}]}\n" +
		"targets: [{virtual_key: a, provider: openai, base_url: \"http://x/v1\"}]\nauth:\n  keys:\n"
	for _, l := range ls[1:] {
		if !strings.HasPrefix(l, "#") {
			src += "    " + l + "\n"
		}
	}
	cfg, err := config.Parse("k.yaml", []byte(src), nil)
	if err != nil || cfg.Auth.Keys[0].Digest != sum || cfg.Auth.Keys[0].Name != "acme" {
		t.Fatalf("entry does not load: %v\n%s", err, src)
	}
	if _, again, _ := run(t, "keys", "new"); lines(again)[0] == key {
		t.Error("two keys alike")
	}
}

func TestKeysHash(t *testing.T) {
	old := Stdin
	t.Cleanup(func() { Stdin = old })
	const digest = "1552c68c498d959463415a62178b4bc34d18656945d453941891ada724280f41" // of sy-example-acme
	for _, in := range []string{"sy-example-acme", "sy-example-acme\n", "sy-example-acme\r\n"} {
		Stdin = strings.NewReader(in)
		code, out, errOut := run(t, "keys", "hash")
		if code != 0 || out != digest+"\n" || errOut != "" {
			t.Errorf("%q: exit %d %q %q; want %s", in, code, out, errOut, digest)
		}
	}
	Stdin = strings.NewReader("\n")
	if code, _, errOut := run(t, "keys", "hash"); code != 1 || !strings.Contains(errOut, "empty") {
		t.Errorf("empty input: exit %d %q", code, errOut)
	}
	// A presented key is trimmed of spaces and tabs: a digest of one that
	// has them could never match.
	for _, in := range []string{"sy-example-acme \n", "\tsy-example-acme"} {
		Stdin = strings.NewReader(in)
		if code, out, errOut := run(t, "keys", "hash"); code != 1 || out != "" || !strings.Contains(errOut, "space or tab") {
			t.Errorf("%q: exit %d %q %q; want refused", in, code, out, errOut)
		}
	}
	for _, args := range [][]string{{"keys"}, {"keys", "old"}, {"keys", "new", "-name", ""}} {
		if code, _, _ := run(t, args...); code != 2 {
			t.Errorf("%q: exit %d; want 2", args, code)
		}
	}
}

// keysConfig: rule 0 routes user vip to a, rule 1 tier gold to b (which
// serves gpt-4o and other). acme binds user and tier; loose binds nothing;
// stuck is bound to tier gold but may only use claude-*, which b does not
// serve.
const keysConfig = `strategy:
  mode: conditional
  conditions:
    - {key: user, value: vip, target_key: a}
    - {key: metadata, field: tier, value: gold, target_key: b}
targets:
  - {virtual_key: c, provider: openai, base_url: "http://c.example/v1", models: [gpt-4o, cheap]}
  - {virtual_key: a, provider: openai, base_url: "http://a.example/v1"}
  - {virtual_key: b, provider: openai, base_url: "http://b.example/v1", models: [gpt-4o, other]}
auth:
  keys:
    - {name: acme, key: sy-acme, user: acme, metadata: {tier: silver}}
    - {name: loose, key: sy-loose}
    - name: stuck
      key: sy-stuck
      user: stuck
      metadata: {tier: gold}
      models: ["claude-*"]
`

func TestValidateKeyLint(t *testing.T) {
	path := writeConfig(t, "gw.yaml", keysConfig)
	warnings := []string{
		"warning: " + path + `:4:7: strategy.conditions[0]: client key "loose" leaves user unbound: its clients can claim this rule by sending user "vip"; bind user on it`,
		"warning: " + path + `:5:7: strategy.conditions[1]: client key "loose" leaves metadata "tier" unbound: its clients can claim this rule by sending X-Gateway-Metadata {"tier": "gold"}; bind metadata "tier" on it`,
		"warning: " + path + `:14:7: auth.keys[2]: client key "stuck" can route no model: with its bindings and allow-list, every model it may use routes to a chain whose members do not serve it (404) or is refused (403)`,
	}
	code, out, _ := run(t, "validate", "-config", path)
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	wantLines(t, "stdout", out, append(warnings, path+": ok (2 rules, 3 targets, 3 client keys; 3 warnings)")...)
	if code, _, _ = run(t, "validate", "-strict", "-config", path); code != 1 {
		t.Errorf("-strict: exit %d; want 1", code)
	}
}

func TestExplainKey(t *testing.T) {
	path := writeConfig(t, "gw.yaml", keysConfig)
	code, out, _ := run(t, "explain", "-config", path, "-model", "gpt-4o", "-user", "vip", "-metadata", `{"tier":"gold"}`, "-key", "acme")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	wantLines(t, "acme", out,
		`key: acme, binds user "acme", binds metadata tier="silver", any model`,
		`note: the key binds user "acme"; the request's user "vip" does not route`,
		`request: chat model "gpt-4o", user "acme", stream false, tools false, metadata tier="silver"`,
		`rule: no match → targets[0] (c)`,
		`chain: c`,
		`member c: provider openai, serves model yes, serves surface native: candidate`,
		`outcome: routes to c`)
	_, out, _ = run(t, "explain", "-config", path, "-model", "gpt-4o", "-key", "stuck")
	wantLines(t, "stuck", out,
		`key: stuck, binds user "stuck", binds metadata tier="gold", models claude-*`,
		`request: chat model "gpt-4o", no user, stream false, tools false, no metadata`,
		`outcome: 403 model_not_allowed: key "stuck" may not use model "gpt-4o" (checked before routing)`)
	_, out, _ = run(t, "explain", "-config", path, "-model", "gpt-4o")
	if !strings.Contains(out, "note: the config has client keys: a request without one gets 401 invalid_api_key") {
		t.Errorf("no 401 note without -key:\n%s", out)
	}
	if code, _, errOut := run(t, "explain", "-config", path, "-model", "gpt-4o", "-key", "nobody"); code != 2 ||
		errOut != "explain: -key \"nobody\" names no client key; configured: acme, loose, stuck\n" {
		t.Errorf("unknown key: exit %d %q", code, errOut)
	}
}

// TestExampleAuthBlockIsStrictClean: config.example.yaml with its auth
// block uncommented still passes validate -strict (its keys bind every
// field a rule routes on).
func TestExampleAuthBlockIsStrictClean(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	at := strings.Index(s, "\n# auth:\n")
	if at < 0 {
		t.Fatal("no commented auth block")
	}
	var block []string
	for _, l := range strings.Split(s[at+1:], "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		block = append(block, strings.TrimPrefix(strings.TrimPrefix(l, "#"), " "))
	}
	path := writeConfig(t, "example.yaml", s+"\n"+strings.Join(block, "\n")+"\n")
	code, out, errOut := run(t, "validate", "-strict", "-config", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	wantLines(t, "stdout", out, path+": ok (7 rules, 9 targets, 2 client keys)")
}
