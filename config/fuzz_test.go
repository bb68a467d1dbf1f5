package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, and every failure is an *Error whose
// problems are non-empty and located (Line >= 1, Col >= 1). A success has
// targets and passes the invariants RouterSpecs relies on.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("../config.example.yaml"); err == nil {
		f.Add(string(data))
	}
	for _, s := range []string{
		baseYAML,
		minimal,
		"",
		"targets: 5\n",
		"targets: [\n",
		"- a\n- b\n",
		"log: &l {<<: *l}\n",
		"a: &x [*x]\n",
		"targets:\n  - *nope\n",
		minimal + "---\nfoo: 1\n",
		minimal + "server: {max_request_bytes: 99999999999999999999999}\n",
		"strategy:\n  mode: ${MODE}\n  conditions: [{key: metadata, value: 1.0, target_keys: [a, a]}]\ntargets: [{virtual_key: a, base_url: 'http://[::1', api_key: '${X'}]\n",
		"targets:\n  - {virtual_key: b, provider: bedrock, aws_session_token: t, api_key: k}\n",
		"? [a]\n: b\n",
		"targets: [{virtual_key: a, model_map: {? [x] : y}}]\n",
		"\t a: 1\n",
		"strategy: !!str 5\n",
		"targets: !!seq [{virtual_key: openai}]\nstrategy: {mode: conditional, conditions: [{key: stream, value: !!str true, target_key: openai}]}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		cfg, err := Parse("fuzz.yaml", []byte(src), envOf(map[string]string{"X": "1"}))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v; want *Error", err, err)
			}
			if cfg != nil {
				t.Fatalf("config returned with an error")
			}
			if len(e.Problems) == 0 {
				t.Fatalf("*Error with no problems")
			}
			for _, p := range e.Problems {
				if p.Line < 1 || p.Col < 1 || p.Message == "" || p.File != "fuzz.yaml" {
					t.Fatalf("unlocated or empty problem %+v", p)
				}
				if strings.Contains(p.String(), "\n") {
					t.Fatalf("problem spans lines: %q", p.String())
				}
			}
			return
		}
		if len(cfg.Targets) == 0 {
			t.Fatalf("valid config without targets")
		}
		rules, targets := cfg.RouterSpecs() // panics (BUG:) if validation let a bad chain through
		if len(rules) != len(cfg.Strategy.Conditions) || len(targets) != len(cfg.Targets) {
			t.Fatalf("RouterSpecs sizes %d, %d", len(rules), len(targets))
		}
		for _, r := range rules {
			if len(r.Chain) == 0 {
				t.Fatalf("empty chain in a valid config")
			}
		}
	})
}
