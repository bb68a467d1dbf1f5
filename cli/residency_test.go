package cli

import (
	"regexp"
	"strings"
	"testing"
)

// euTenantConfig is the EU tenant of docs/residency.md before the
// fix: globex-eu's tier binding pins its chat-like requests only.
const euTenantConfig = `strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: openai}
    - {key: metadata, field: tier, value: gold, target_key: eu}
targets:
  - {virtual_key: openai, api_key: k, residency: us}
  - {virtual_key: eu, provider: openai, base_url: "https://eu.example.com/v1", residency: eu}
auth:
  keys:
    - name: globex-eu
      key: globex-key
      user: globex
      metadata: {tier: gold}
      models: [gpt-4o-mini]
      residency: [eu]
`

// shellFields splits a command line printed by the proof (words, and
// single-quoted words as shellQuote writes them).
func shellFields(s string) []string {
	re := regexp.MustCompile(`'((?:[^']|'\\'')*)'|(\S+)`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		if m[2] != "" {
			out = append(out, m[2])
		} else {
			out = append(out, strings.ReplaceAll(m[1], `'\''`, "'"))
		}
	}
	return out
}

func TestValidateRefusesResidencyEscapeAndExplainShowsIt(t *testing.T) {
	path := writeConfig(t, "gw.yaml", euTenantConfig)
	code, out, _ := run(t, "validate", "-config", path)
	if code != ExitFail {
		t.Fatalf("validate exit %d; want %d\n%s", code, ExitFail, out)
	}
	want := path + `:16:18: auth.keys[0].residency: client key "globex-eu" (residency ["eu"]) can reach target "openai" (residency "us") through the fallback (no condition matches): POST /v1/embeddings {"model":"gpt-4o-mini"}; see switchyard explain -key globex-eu -surface embeddings -model gpt-4o-mini`
	wantLines(t, "validate", out, want)

	// The witness, run through explain, routes to the target named.
	cmd := shellFields(out[strings.Index(out, "see switchyard explain ")+len("see switchyard explain "):])
	code, exp, errOut := run(t, append([]string{"explain", "-config", path}, cmd...)...)
	if code != ExitOK {
		t.Fatalf("explain exit %d: %s", code, errOut)
	}
	for _, s := range []string{"outcome: routes to openai",
		"residency: member openai has residency us: OUTSIDE the key's labels",
		"residency proof: key globex-eu may reach [eu]; its requests can reach openai (residency us, via fallback) OUTSIDE; eu (residency eu, via strategy.conditions[1])",
		"residency proof: FAILS"} {
		if !strings.Contains(exp, s) {
			t.Errorf("explain output lacks %q:\n%s", s, exp)
		}
	}

	// The fix: a user rule matches on every surface.
	fixed := strings.Replace(euTenantConfig, "    - {key: model, value: gpt-4o", "    - {key: user, value: globex, target_key: eu}\n    - {key: model, value: gpt-4o", 1)
	path = writeConfig(t, "fixed.yaml", fixed)
	if code, out, _ := run(t, "validate", "-config", path); code != ExitOK {
		t.Fatalf("fixed config: validate exit %d\n%s", code, out)
	}
	_, exp, _ = run(t, "explain", "-config", path, "-key", "globex-eu", "-surface", "embeddings", "-model", "gpt-4o-mini")
	for _, s := range []string{"outcome: routes to eu", "residency: member eu has residency eu: allowed",
		"residency proof: key globex-eu may reach [eu]; its requests can reach eu (residency eu, via strategy.conditions[0])\n",
		"residency proof: ok"} {
		if !strings.Contains(exp, s) {
			t.Errorf("explain output lacks %q:\n%s", s, exp)
		}
	}
}

func TestValidateGlobalPoolLint(t *testing.T) {
	cfg := `strategy: {mode: conditional, conditions: [{key: model, value: x, target_key: b}]}
targets:
  - {virtual_key: b, provider: bedrock, region: eu-central-1, api_key: k, residency: eu, models: ["global.anthropic.*"]}
`
	path := writeConfig(t, "gw.yaml", cfg)
	code, out, _ := run(t, "validate", "-config", path)
	if code != ExitOK || !strings.Contains(out, `warning: `+path+`:3:5: targets[0]: target "b" has residency "eu" but it can send Bedrock a model id beginning "global." (models entry "global.anthropic.*")`) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if code, _, _ := run(t, "validate", "-strict", "-config", path); code != ExitFail {
		t.Fatalf("-strict exit %d; want %d", code, ExitFail)
	}
}
