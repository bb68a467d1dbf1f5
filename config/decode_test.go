package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// minimal is the smallest valid config; decode cases append to or edit it.
const minimal = `strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: openai}
targets:
  - virtual_key: openai
`

func TestStrictDecodeProblems(t *testing.T) {
	cases := []struct {
		name  string
		src   string
		wants []want
	}{
		{"unknown top-level key", minimal + "servr:\n  listen: :8080\n",
			[]want{{"servr", 7, "servr", `unknown key "servr" in the config; want server, log, strategy, targets, auth, quotas, audit, admin, tracing`}}},
		{"unknown nested key", strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n    retry:\n      attemps: 2\n", 1),
			[]want{{"targets[0].retry.attemps", 8, "attemps", `unknown key "attemps" in retry; want attempts, on_status_codes, initial_backoff_ms`}}},
		{"unknown key in flow condition", strings.Replace(minimal, "target_key: openai}", "target: openai}", 1),
			[]want{
				{"strategy.conditions[0].target_key", 4, "{", "no target; want target_key: NAME or target_keys: [NAME, ...]"},
				{"strategy.conditions[0].target", 4, "target:", `unknown key "target" in a condition; want key, field, value, target_key, target_keys`},
			}},
		{"unknown key in server.websocket", minimal + "server:\n  websocket:\n    idle: 1m\n",
			[]want{{"server.websocket.idle", 9, "idle", `unknown key "idle" in server.websocket; want max_message_bytes, idle_timeout`}}},
		{"unknown key with capitals is quoted", minimal + "Server: {}\n",
			[]want{{`["Server"]`, 7, "Server", `unknown key "Server" in the config; want server, log, strategy, targets, auth, quotas, audit, admin, tracing`}}},
		{"duplicate top-level key", minimal + "targets:\n  - virtual_key: x\n",
			[]want{{"targets", 7, "targets", `duplicate key "targets" (first at line 5); a key may appear once in a mapping`}}},
		{"duplicate nested key keeps checking the first value", strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n    timeout: 0s\n    timeout: 5s\n", 1),
			[]want{
				{"targets[0].timeout", 7, "0s", `0s is out of range; want a duration above 0, such as "60s"`},
				{"targets[0].timeout", 8, "timeout", `duplicate key "timeout" (first at line 7); a key may appear once in a mapping`},
			}},
		{"duplicate model_map key", strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n    model_map: {a: b, a: c}\n", 1),
			[]want{{`targets[0].model_map["a"]`, 7, "a: c", `duplicate key "a" (first at line 7); a key may appear once in a mapping`}}},
		{"targets wrong type", "strategy: {mode: conditional, conditions: [{key: model, value: x, target_key: a}]}\ntargets: 5\n",
			[]want{
				{"strategy.conditions[0].target_key", 1, "a}", `unknown target "a"; declared: none`},
				{"targets", 2, "5", "got the integer 5; want a list of targets"},
			}},
		{"target not a mapping", strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n  - openai\n", 1),
			[]want{
				{"targets[1]", 7, "openai", `got the string "openai"; want a target (a mapping)`},
				{"targets[1].virtual_key", 7, "openai", "virtual_key is required; want a unique name for rules to use"},
				{"targets[1].provider", 7, "openai", "provider is required; want openai, anthropic, bedrock, azure, vertex or gemini"},
			}},
		{"server not a mapping", minimal + "server: [a]\n",
			[]want{{"server", 7, "[a]", "got a list; want server (a mapping)"}}},
		{"top level not a mapping", "- a\n- b\n",
			[]want{
				{"", 1, "-", "got a list; want a mapping of server, log, strategy, targets, auth, quotas, audit, admin, tracing"},
				{"targets", 1, "-", "no targets; want at least one (targets[0] is the no-match fallback)"},
				{"strategy.mode", 1, "-", "mode is required; want conditional"},
			}},
		{"int field given a string", strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n    retry: {attempts: two}\n", 1),
			[]want{{"targets[0].retry.attempts", 7, "two", `got the string "two"; want an integer`}}},
		{"int field given a float", strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n    retry: {attempts: 1.5}\n", 1),
			[]want{{"targets[0].retry.attempts", 7, "1.5", "got the number 1.5; want an integer"}}},
		{"int too big", minimal + "server: {max_request_bytes: 99999999999999999999999}\n",
			[]want{{"server.max_request_bytes", 7, "999", `"99999999999999999999999" is out of range; want an integer that fits in 64 bits`}}},
		{"duration without unit", minimal + "server: {request_timeout: 60}\n",
			[]want{{"server.request_timeout", 7, "60", `got the integer 60; want a duration with a unit, such as "60s" or "1m30s"`}}},
		{"duration unparsable", minimal + "server: {request_timeout: 5 minutes}\n",
			[]want{{"server.request_timeout", 7, "5 min", `"5 minutes" is not a duration; want a Go duration such as "60s" or "1m30s"`}}},
		{"bool given a string", minimal + "log: {access_log: on}\n",
			[]want{{"log.access_log", 7, "on", `got the string "on"; want true or false`}}},
		{"server bool given a string", minimal + "server: {reduce_memory_usage: yes}\n",
			[]want{{"server.reduce_memory_usage", 7, "yes", `got the string "yes"; want true or false`}}},
		{"server bool given an integer", minimal + "server:\n  listen: 127.0.0.1:1\n  reduce_memory_usage: 1\n",
			[]want{{"server.reduce_memory_usage", 9, "1", "got the integer 1; want true or false"}}},
		{"string given a list", strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n    api_key: [a]\n", 1),
			[]want{{"targets[0].api_key", 7, "[a]", "got a list; want a string"}}},
		{"condition value a mapping", strings.Replace(minimal, "value: gpt-4o", "value: {a: 1}", 1),
			[]want{
				{"strategy.conditions[0].value", 4, "{a", "got a mapping; want a string, number or boolean"},
			}},
		{"models not a list", strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n    models: gpt-4o\n", 1),
			[]want{{"targets[0].models", 7, "gpt-4o", `got the string "gpt-4o"; want a list of model ids or prefix* patterns`}}},
		{"on_status_codes null entry", strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n    retry: {on_status_codes: [503, ~]}\n", 1),
			[]want{{"targets[0].retry.on_status_codes[1]", 7, "~", "got null; want an integer"}}},
		{"unknown alias", strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n    retry: *nope\n", 1),
			[]want{{"targets[0].retry", 7, "*nope", "unknown alias *nope; want an anchor &nope defined in the file"}}},
		{"syntax error", "targets: [\n",
			[]want{{"", 1, "[", "YAML syntax error: sequence end token ']' not found"}}},
		{"second document", minimal + "---\nfoo: 1\n",
			[]want{{"", 8, "foo", "a second YAML document (document 2); want one document per config file"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkProblems(t, tc.src, problemsOf(t, tc.src, noEnv), tc.wants)
		})
	}
}

func TestEmptyFileReportsMissingSections(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n", "---\n"} {
		checkProblems(t, src, problemsOf(t, src, noEnv), []want{
			{"targets", 1, "", "no targets; want at least one (targets[0] is the no-match fallback)"},
			{"strategy.mode", 1, "", "mode is required; want conditional"},
		})
	}
}

// TestAllProblemsInLineOrder: one load reports decode and semantic problems
// together, sorted by line, not just the first.
func TestAllProblemsInLineOrder(t *testing.T) {
	src := `targets:
  - virtual_key: a
    provider: mistral
    timout: 5s
  - virtual_key: a
strategy:
  mode: conditional
  conditions:
    - key: modle
      value: x
      target_key: nobody
log: {level: loud}
`
	checkProblems(t, src, problemsOf(t, src, noEnv), []want{
		{"targets[0].provider", 3, "mistral", `"mistral" is not a provider; want openai, anthropic, bedrock, azure, vertex or gemini`},
		{"targets[0].timout", 4, "timout", `unknown key "timout" in a target; want virtual_key, provider, base_url, api_key, region, aws_access_key_id, aws_secret_access_key, aws_session_token, anthropic_betas, models, model_map, timeout, retry, circuit_breaker, concurrency, limits, prices, residency, batch_prices, azure_api_version, azure_deployment_type, azure_tenant_id, azure_client_id, azure_client_secret, azure_authority, project, credentials_file, credentials_json`},
		{"targets[1].provider", 5, "virtual_key", "provider is required; want openai, anthropic, bedrock, azure, vertex or gemini"},
		{"targets[1].virtual_key", 5, "@@a", `duplicate virtual_key "a" (first at targets[0], line 2); want unique names`},
		{"strategy.conditions[0].key", 9, "modle", `"modle" is not a condition key; want model, model_prefix, user, stream, has_tools or metadata`},
		{"strategy.conditions[0].target_key", 11, "nobody", `unknown target "nobody"; declared: a`},
		{"log.level", 12, "loud", `"loud" is not a log level; want debug, info, warn or error`},
	})
	e := &Error{Problems: problemsOf(t, src, noEnv)}
	first := strings.SplitN(e.Error(), "\n", 2)[0]
	if want := `test.yaml:3:15: targets[0].provider: "mistral" is not a provider; want openai, anthropic, bedrock, azure, vertex or gemini`; first != want {
		t.Errorf("Error() first line %q; want %q", first, want)
	}
	if n := strings.Count(e.Error(), "\n"); n != 6 {
		t.Errorf("Error() has %d newlines; want 6 (7 problems, one a line)", n)
	}
}

func TestProblemString(t *testing.T) {
	cases := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "c.yaml", Line: 3, Col: 5, Path: "strategy.conditions[2].key", Message: "bad"}, "c.yaml:3:5: strategy.conditions[2].key: bad"},
		{Problem{File: "c.yaml", Line: 1, Col: 1, Message: "YAML syntax error: x"}, "c.yaml:1:1: YAML syntax error: x"},
		{Problem{Path: "targets", Message: "m"}, "<config>: targets: m"},
	}
	for _, tc := range cases {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q; want %q", got, tc.want)
		}
	}
}

// TestConditionValueLiterals: YAML numbers keep their text (metadata numbers
// compare as written), booleans become "true"/"false".
func TestConditionValueLiterals(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"true", "true"},
		{"True", "true"},
		{"false", "false"},
		{"1.0", "1.0"},
		{"1", "1"},
		{"0x1F", "0x1F"},
		{"1e3", "1e3"},
		{`"1.0"`, "1.0"},
		{"'gold'", "gold"},
		{"gold", "gold"},
	}
	for _, tc := range cases {
		src := "strategy:\n  mode: conditional\n  conditions:\n    - key: metadata\n      field: f\n      value: " + tc.yaml + "\n      target_key: openai\ntargets:\n  - virtual_key: openai\n"
		cfg := mustParse(t, src, noEnv)
		if got := cfg.Strategy.Conditions[0].Value; got != tc.want {
			t.Errorf("value: %s decoded as %q; want %q", tc.yaml, got, tc.want)
		}
	}
	// A boolean stream value is accepted unquoted, as ferrogw configs write it.
	src := "strategy:\n  mode: conditional\n  conditions:\n    - {key: stream, value: true, target_key: openai}\n    - {key: has_tools, value: \"false\", target_key: openai}\ntargets:\n  - virtual_key: openai\n"
	cfg := mustParse(t, src, noEnv)
	if a, b := cfg.Strategy.Conditions[0].Value, cfg.Strategy.Conditions[1].Value; a != "true" || b != "false" {
		t.Errorf("stream/has_tools values %q, %q; want true, false", a, b)
	}
}

// TestAnchorsAndMergeKeys: shared target settings through an anchor and <<.
func TestAnchorsAndMergeKeys(t *testing.T) {
	src := `x-defaults: &defaults
  timeout: 10s
  retry: {attempts: 3}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: a}
targets:
  - <<: *defaults
    virtual_key: a
    provider: openai
    timeout: 20s
  - <<: *defaults
    virtual_key: b
    provider: openai
    base_url: http://127.0.0.1:9/v1
`
	// x-defaults is not a known key: anchors must live in a known place.
	checkProblems(t, src, problemsOf(t, src, noEnv), []want{
		{"[\"x-defaults\"]", 1, "x-defaults", `unknown key "x-defaults" in the config; want server, log, strategy, targets, auth, quotas, audit, admin, tracing`},
	})

	src = `strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: a}
targets:
  - &base
    virtual_key: a
    provider: openai
    timeout: 20s
    retry: {attempts: 3}
  - <<: *base
    virtual_key: b
    base_url: http://127.0.0.1:9/v1
`
	cfg := mustParse(t, src, noEnv)
	a, b := cfg.Targets[0], cfg.Targets[1]
	if b.VirtualKey != "b" || b.Provider != "openai" || b.Timeout.String() != "20s" || b.Retry.Attempts != 3 {
		t.Errorf("merged target = %+v; want b, openai, 20s, 3 attempts", b)
	}
	if a.BaseURL != DefaultOpenAIBaseURL || b.BaseURL != "http://127.0.0.1:9/v1" {
		t.Errorf("base URLs %q, %q", a.BaseURL, b.BaseURL)
	}
}

func TestCircularAliasIsAProblemNotAHang(t *testing.T) {
	src := minimal + "log: &l {<<: *l}\n"
	ps := problemsOf(t, src, noEnv)
	if ps[0].Line != 7 || ps[0].Path != "log" || !strings.Contains(ps[0].Message, "merge keys nest deeper than") {
		t.Errorf("got %v; want a log problem on line 7 about nesting", ps)
	}
}

func TestMergeKeyForms(t *testing.T) {
	// A list of mappings merges in order (the first wins), explicit keys win
	// over merged ones, and a merged key is not a duplicate.
	src := `strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: a}
targets:
  - &slow {virtual_key: slow, provider: openai, timeout: 90s, retry: {attempts: 4}}
  - &fast {virtual_key: fast, provider: anthropic, timeout: 5s}
  - <<: [*fast, *slow]
    virtual_key: a
`
	cfg := mustParse(t, src, noEnv)
	a := cfg.Targets[2]
	if a.VirtualKey != "a" || a.Provider != "anthropic" || a.Timeout.String() != "5s" || a.Retry.Attempts != 4 {
		t.Errorf("merged = %s %s %v %d; want a anthropic 5s 4", a.VirtualKey, a.Provider, a.Timeout, a.Retry.Attempts)
	}

	src = minimal + "log:\n  <<: [5]\n"
	checkProblems(t, src, problemsOf(t, src, noEnv), []want{
		{"log", 8, "[5]", "got the integer 5 after <<; want a mapping or a list of mappings"},
	})
}

func TestBlockStringsAndOddKeys(t *testing.T) {
	src := strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n    api_key: |-\n      sk-block\n", 1)
	if k := mustParse(t, src, noEnv).Targets[0].APIKey; k != "sk-block" {
		t.Errorf("block api_key = %q; want sk-block", k)
	}
	src = "log: &k {a: b}\n" + minimal + "*k : x\n"
	checkProblems(t, src, problemsOf(t, src, noEnv), []want{
		{"log.a", 1, "a:", `unknown key "a" in log; want level, format, access_log`},
		{"", 8, "*k", "got a mapping as a key; want a string key"},
	})
	src = minimal + "server: {request_timeout: [1s]}\nlog: {access_log: \"${X}\"}\n"
	checkProblems(t, src, problemsOf(t, src, envOf(map[string]string{"X": "maybe"})), []want{
		{"server.request_timeout", 7, "[1s]", `got a list; want a duration such as "60s" or "1m30s"`},
		{"log.access_log", 8, `"${X}"`, `"maybe" (after ${} expansion) is not a boolean; want true or false`},
	})
}

// TestAliasExpansionIsBounded: a "billion laughs" of merge keys and aliases
// is refused quickly instead of hanging.
func TestAliasExpansionIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("log:\n  l0: &a0 {level: info}\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "  l%d: &a%d {<<: [", i, i)
		for j := 0; j < 8; j++ {
			fmt.Fprintf(&b, "*a%d, ", i-1)
		}
		b.WriteString("]}\n")
	}
	b.WriteString("server: *a12\n")
	start := time.Now()
	ps := problemsOf(t, b.String(), noEnv)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Parse took %v", d)
	}
	found := false
	for _, p := range ps {
		found = found || strings.Contains(p.Message, "expand the config beyond")
	}
	if !found {
		t.Errorf("no expansion problem in %v", ps)
	}

	src := minimal + "server:\n  <<: 5\n"
	checkProblems(t, src, problemsOf(t, src, noEnv), []want{
		{"server", 8, "5", "got the integer 5 after <<; want a mapping or a list of mappings"},
	})
}
