package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// cleanConfig has no lint findings.
const cleanConfig = `server:
  listen: 127.0.0.1:8080
strategy:
  mode: conditional
  conditions:
    - key: model
      value: gpt-4o
      target_key: openai
    - key: model_prefix
      value: claude-
      target_keys: [anthropic, bedrock]
targets:
  - virtual_key: openai
    api_key: sk-test
    models: [gpt-4o, gpt-4o-mini]
  - virtual_key: anthropic
    api_key: ak-test
  - virtual_key: bedrock
    region: us-east-1
    api_key: bk-test
    models: ["claude-*"]
`

// lintConfig loads but has three findings: conditions[1] repeats
// conditions[0], the "claude-" chain member openai serves no claude model,
// and targets[2] is unreachable.
const lintConfig = `strategy:
  mode: conditional
  conditions:
    - key: model
      value: gpt-4o
      target_key: openai
    - key: model
      value: gpt-4o
      target_key: anthropic
    - key: model_prefix
      value: claude-
      target_keys: [anthropic, openai]
targets:
  - virtual_key: openai
    api_key: sk-test
    models: [gpt-4o]
  - virtual_key: anthropic
    api_key: ak-test
  -   virtual_key: spare
      provider: openai
      api_key: sk-spare
`

func TestValidateOK(t *testing.T) {
	path := writeConfig(t, "gw.yaml", cleanConfig)
	for _, args := range [][]string{
		{"validate", "-config", path},
		{"validate", "-config", path, "-strict"},
	} {
		code, out, errOut := run(t, args...)
		if code != 0 {
			t.Errorf("%q: exit %d, want 0", args, code)
		}
		wantLines(t, "stdout", out, path+": ok (2 rules, 3 targets)")
		wantLines(t, "stderr", errOut)
	}
}

func TestValidateWarnings(t *testing.T) {
	path := writeConfig(t, "gw.yaml", lintConfig)
	warnings := []string{
		"warning: " + path + `:7:7: strategy.conditions[1]: never matches: it repeats strategy.conditions[0] (model: gpt-4o), which comes first`,
		"warning: " + path + `:10:7: strategy.conditions[2]: chain member "openai" does not serve a model starting with "claude-", so it is never a candidate for this condition`,
		// The odd indentation of this target checks the column.
		"warning: " + path + `:19:7: targets[2]: target "spare" is unreachable: no condition names it and it is not the fallback (targets[0])`,
	}

	code, out, errOut := run(t, "validate", "-config", path)
	if code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	wantLines(t, "stdout", out, append(warnings, path+": ok (3 rules, 3 targets; 3 warnings)")...)
	wantLines(t, "stderr", errOut)

	code, out, _ = run(t, "validate", "-strict", "-config", path)
	if code != 1 {
		t.Errorf("-strict: exit %d, want 1", code)
	}
	wantLines(t, "-strict stdout", out, append(warnings, path+": invalid with -strict (3 warnings)")...)
}

// TestValidateUnreachableModel: docs/configuration.md, Command line's third lint, "a model listed by
// no reachable target": the eu target lists gpt-4o, but rule 0 pins gpt-4o
// to openai before the metadata rule that names eu, so no gpt-4o request
// can reach eu. The warning points at the target; -strict refuses it.
func TestValidateUnreachableModel(t *testing.T) {
	path := writeConfig(t, "gw.yaml", `strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: openai}
    - {key: metadata, field: tier, value: gold, target_key: eu}
targets:
  - {virtual_key: openai, api_key: sk-test, models: [gpt-4o]}
  - virtual_key: eu
    provider: openai
    base_url: https://eu.example.com/v1
    models: [gpt-4o, mistral-large]
`)
	warning := "warning: " + path + `:8:5: targets[1]: model "gpt-4o" is listed, but no request for it can reach target "eu": strategy.conditions[0] (model: gpt-4o) routes it first`
	code, out, _ := run(t, "validate", "-config", path)
	if code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	wantLines(t, "stdout", out, warning, path+": ok (2 rules, 2 targets; 1 warning)")
	code, out, _ = run(t, "validate", "-strict", "-config", path)
	if code != 1 {
		t.Errorf("-strict: exit %d, want 1", code)
	}
	wantLines(t, "-strict stdout", out, warning, path+": invalid with -strict (1 warning)")
}

func TestValidateInvalid(t *testing.T) {
	path := writeConfig(t, "bad.yaml", `strategy:
  mode: conditional
  conditions:
    - key: modle
      value: gpt-4o
      target_key: openai
    - key: model
      value: x
      target_key: nobody
targets:
  - virtual_key: openai
    api_key: sk-test
`)
	code, out, errOut := run(t, "validate", "-config", path)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	// Every problem, one a line, in file order; no summary.
	wantLines(t, "stdout", out,
		path+`:4:12: strategy.conditions[0].key: "modle" is not a condition key; want model, model_prefix, user, stream, has_tools or metadata`,
		path+`:9:19: strategy.conditions[1].target_key: unknown target "nobody"; declared: openai`,
	)
	wantLines(t, "stderr", errOut)
}

func TestValidateUnreadable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	code, out, _ := run(t, "validate", "-config", missing)
	if code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
	wantLines(t, "stdout", out, missing+": cannot read config: no such file or directory")

	code, out, _ = run(t, "validate", "-config", dir)
	if code != 1 {
		t.Errorf("directory: exit %d, want 1", code)
	}
	wantLines(t, "stdout", out, dir+": cannot read config: is a directory")
}

func TestValidateDefaultConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cleanConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)

	t.Setenv(EnvConfig, "")
	code, out, _ := run(t, "validate")
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	wantLines(t, "config.yaml default", out, "config.yaml: ok (2 rules, 3 targets)")

	other := writeConfig(t, "env.yaml", lintConfig)
	t.Setenv(EnvConfig, other)
	_, out, _ = run(t, "validate")
	if l := lines(out); len(l) == 0 || l[len(l)-1] != other+": ok (3 rules, 3 targets; 3 warnings)" {
		t.Errorf("$%s not used: %q", EnvConfig, out)
	}
}

func TestColumn(t *testing.T) {
	src := []string{"targets:", "  - virtual_key: a", "  -   - x", "    key: v", "", "\t- y", "-"}
	tests := []struct{ line, want int }{
		{0, 0}, {1, 1}, {2, 5}, {3, 9}, {4, 5}, {5, 1}, {6, 4}, {7, 1}, {99, 1},
	}
	for _, tt := range tests {
		if got := column(src, tt.line); got != tt.want {
			t.Errorf("column(line %d) = %d, want %d", tt.line, got, tt.want)
		}
	}
}

// TestExampleConfigIsStrictClean keeps the shipped example honest: it must
// load on a fresh machine and carry no lint finding, so a user who copies it
// starts from a config that `validate -strict` accepts.
func TestExampleConfigIsStrictClean(t *testing.T) {
	path := filepath.Join("..", "config.example.yaml")
	code, out, errOut := run(t, "validate", "-strict", "-config", path)
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	wantLines(t, "stdout", out, path+": ok (7 rules, 9 targets)")
}
