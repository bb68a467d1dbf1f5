package config

import (
	"strings"
	"testing"
)

// baseYAML is a valid config touching every section; validation cases
// replace one piece of it. Line numbers below refer to it.
const baseYAML = `server:
  listen: 127.0.0.1:8080
  max_request_bytes: 1024
  request_timeout: 300s
  shutdown_timeout: 30s
log:
  level: info
  format: json
  access_log: true
strategy:
  mode: conditional
  conditions:
    - key: model
      value: gpt-4o
      target_key: a
    - key: metadata
      field: tier
      value: gold
      target_keys: [a, b]
targets:
  - virtual_key: a
    provider: openai
    base_url: https://api.openai.com/v1
    models: [gpt-4o, "gpt-5*"]
    model_map: {gpt-4o: gpt-4o-2024-08-06}
    timeout: 60s
    retry: {attempts: 1, on_status_codes: [503], initial_backoff_ms: 100}
    circuit_breaker: {failure_threshold: 5, success_threshold: 1, max_half_threshold: 1, timeout: 30s}
    concurrency: {max_concurrency: 256, queue_size: 1000}
  - virtual_key: b
    provider: bedrock
    region: us-east-1
    aws_access_key_id: AKIDEXAMPLE
    aws_secret_access_key: secret
`

func TestBaseYAMLIsValid(t *testing.T) {
	cfg := mustParse(t, baseYAML, noEnv)
	if len(cfg.Targets) != 2 || len(cfg.Strategy.Conditions) != 2 {
		t.Fatalf("decoded %d targets, %d conditions; want 2, 2", len(cfg.Targets), len(cfg.Strategy.Conditions))
	}
}

// TestValidationProblems covers every semantic rule of docs/configuration.md, Configuration reference with the exact
// path, line, column and message it reports.
func TestValidationProblems(t *testing.T) {
	const (
		wantKeys = "want model, model_prefix, user, stream, has_tools or metadata"
		urlWant  = "want an absolute http(s) URL with a host and no query or fragment, such as https://api.openai.com/v1"
	)
	cases := []struct {
		name     string
		old, new string
		wants    []want
	}{
		// server and log
		{"listen not host:port", "listen: 127.0.0.1:8080", "listen: localhost",
			[]want{{"server.listen", 2, "localhost", `"localhost" is not a host:port address; want e.g. "127.0.0.1:8080" or ":8080"`}}},
		{"max_request_bytes 0", "max_request_bytes: 1024", "max_request_bytes: 0",
			[]want{{"server.max_request_bytes", 3, "0", "0 is out of range; want 1 or more"}}},
		{"request_timeout 0", "request_timeout: 300s", "request_timeout: 0s",
			[]want{{"server.request_timeout", 4, "0s", `0s is out of range; want a duration above 0, such as "300s"`}}},
		{"request_timeout negative", "request_timeout: 300s", "request_timeout: -5s",
			[]want{{"server.request_timeout", 4, "-5s", `-5s is out of range; want a duration above 0, such as "300s"`}}},
		{"websocket max_message_bytes too small", "shutdown_timeout: 30s", "shutdown_timeout: 30s\n  websocket:\n    max_message_bytes: 100",
			[]want{{"server.websocket.max_message_bytes", 7, "100", "100 is out of range; want 1024 to 1073741824"}}},
		{"websocket idle_timeout 0", "shutdown_timeout: 30s", "shutdown_timeout: 30s\n  websocket: {idle_timeout: 0s}",
			[]want{{"server.websocket.idle_timeout", 6, "0s", `0s is out of range; want 1s to 24h0m0s, such as "5m"`}}},
		{"shutdown_timeout 0", "shutdown_timeout: 30s", "shutdown_timeout: 0s",
			[]want{{"server.shutdown_timeout", 5, "0s", `0s is out of range; want a duration above 0, such as "30s"`}}},
		{"drain_delay negative", "shutdown_timeout: 30s", "shutdown_timeout: 30s\n  drain_delay: -1s",
			[]want{{"server.drain_delay", 6, "-1s", `-1s is out of range; want 0s (no delay) to 5m0s, such as "5s"`}}},
		{"drain_delay too long", "shutdown_timeout: 30s", "shutdown_timeout: 30s\n  drain_delay: 6m",
			[]want{{"server.drain_delay", 6, "6m", `6m0s is out of range; want 0s (no delay) to 5m0s, such as "5s"`}}},
		{"config_watch too often", "shutdown_timeout: 30s", "shutdown_timeout: 30s\n  config_watch: 10ms",
			[]want{{"server.config_watch", 6, "10ms", `10ms is out of range; want 0s (off) or 100ms to 1h0m0s, such as "5s"`}}},
		{"config_watch negative", "shutdown_timeout: 30s", "shutdown_timeout: 30s\n  config_watch: -5s",
			[]want{{"server.config_watch", 6, "-5s", `-5s is out of range; want 0s (off) or 100ms to 1h0m0s, such as "5s"`}}},
		{"config_watch too rare", "shutdown_timeout: 30s", "shutdown_timeout: 30s\n  config_watch: 2h",
			[]want{{"server.config_watch", 6, "2h", `2h0m0s is out of range; want 0s (off) or 100ms to 1h0m0s, such as "5s"`}}},
		{"log level", "level: info", "level: verbose",
			[]want{{"log.level", 7, "verbose", `"verbose" is not a log level; want debug, info, warn or error`}}},
		{"log format", "format: json", "format: text",
			[]want{{"log.format", 8, "text", `"text" is not a log format; want json or console`}}},

		// strategy
		{"unknown mode", "mode: conditional", "mode: round_robin",
			[]want{{"strategy.mode", 11, "round_robin", `"round_robin" is not a strategy mode; want conditional`}}},
		{"missing mode", "  mode: conditional\n", "",
			[]want{{"strategy.mode", 10, "strategy", "mode is required; want conditional"}}},
		{"no conditions", "  conditions:\n    - key: model\n      value: gpt-4o\n      target_key: a\n    - key: metadata\n      field: tier\n      value: gold\n      target_keys: [a, b]\n", "  conditions: []\n",
			[]want{{"strategy.conditions", 12, "[]", "conditional mode needs at least one condition; want a list of {key, value, target_key}"}}},
		{"missing key", "    - key: model\n      value: gpt-4o", "    - value: gpt-4o",
			[]want{{"strategy.conditions[0].key", 13, "value", "key is required; " + wantKeys}}},
		{"unknown key", "key: model", "key: modle",
			[]want{{"strategy.conditions[0].key", 13, "modle", `"modle" is not a condition key; ` + wantKeys}}},
		{"stream value not boolean", "key: model\n      value: gpt-4o", "key: stream\n      value: yes",
			[]want{{"strategy.conditions[0].value", 14, "yes", `"yes" is not a boolean; want true or false`}}},
		{"has_tools value quoted True", "key: model\n      value: gpt-4o", "key: has_tools\n      value: \"True\"",
			[]want{{"strategy.conditions[0].value", 14, `"True"`, `"True" is not a boolean; want true or false`}}},
		{"stream without value", "key: model\n      value: gpt-4o", "key: stream",
			[]want{{"strategy.conditions[0].value", 13, "key", "value is required with key stream; want true or false"}}},
		{"model value empty", "value: gpt-4o", `value: ""`,
			[]want{{"strategy.conditions[0].value", 14, `""`, "value is required with key model; want a non-empty string"}}},
		{"model value missing", "      value: gpt-4o\n", "",
			[]want{{"strategy.conditions[0].value", 13, "key", "value is required with key model; want a non-empty string"}}},
		{"user value spaces", "key: model\n      value: gpt-4o", "key: user\n      value: ' vip'",
			[]want{{"strategy.conditions[0].value", 14, "' vip'", `" vip" has surrounding spaces; want the value without them`}}},
		{"model_prefix value spaces", "key: model\n      value: gpt-4o", "key: model_prefix\n      value: 'gpt- '",
			[]want{{"strategy.conditions[0].value", 14, "'gpt- '", `"gpt- " has surrounding spaces; want the value without them`}}},
		{"metadata without field", "      field: tier\n", "",
			[]want{{"strategy.conditions[1].field", 16, "key", "field is required with key metadata; want the X-Gateway-Metadata entry name"}}},
		{"metadata without value", "      value: gold\n", "",
			[]want{{"strategy.conditions[1].value", 16, "key", "value is required with key metadata; want the entry's value as written"}}},
		{"field on model", "value: gpt-4o\n", "value: gpt-4o\n      field: tier\n",
			[]want{{"strategy.conditions[0].field", 15, "tier", "field is only allowed with key metadata; remove it or use key: metadata"}}},
		{"both target_key and target_keys", "target_key: a\n", "target_key: a\n      target_keys: [a]\n",
			[]want{{"strategy.conditions[0].target_keys", 16, "[a]", "both target_key and target_keys are set; want exactly one"}}},
		{"no target", "      target_key: a\n", "",
			[]want{{"strategy.conditions[0].target_key", 13, "key", "no target; want target_key: NAME or target_keys: [NAME, ...]"}}},
		{"empty target_keys", "target_keys: [a, b]", "target_keys: []",
			[]want{{"strategy.conditions[1].target_keys", 19, "[]", "target_keys is empty; want at least one target name"}}},
		{"unknown target_key", "target_key: a", "target_key: c",
			[]want{{"strategy.conditions[0].target_key", 15, "c", `unknown target "c"; declared: a, b`}}},
		{"unknown target in chain", "target_keys: [a, b]", "target_keys: [a, x]",
			[]want{{"strategy.conditions[1].target_keys[1]", 19, "x", `unknown target "x"; declared: a, b`}}},
		{"repeat in chain", "target_keys: [a, b]", "target_keys: [a, b, a]",
			[]want{{"strategy.conditions[1].target_keys[2]", 19, "a]", `target "a" repeats target_keys[0]; want each target once in a chain`}}},

		// targets
		{"no targets", "targets:\n  - virtual_key: a\n    provider: openai\n    base_url: https://api.openai.com/v1\n    models: [gpt-4o, \"gpt-5*\"]\n    model_map: {gpt-4o: gpt-4o-2024-08-06}\n    timeout: 60s\n    retry: {attempts: 1, on_status_codes: [503], initial_backoff_ms: 100}\n    circuit_breaker: {failure_threshold: 5, success_threshold: 1, max_half_threshold: 1, timeout: 30s}\n    concurrency: {max_concurrency: 256, queue_size: 1000}\n  - virtual_key: b\n    provider: bedrock\n    region: us-east-1\n    aws_access_key_id: AKIDEXAMPLE\n    aws_secret_access_key: secret\n", "targets: []\n",
			[]want{
				{"strategy.conditions[0].target_key", 15, "@@a", `unknown target "a"; declared: none`},
				{"strategy.conditions[1].target_keys[0]", 19, "a,", `unknown target "a"; declared: none`},
				{"strategy.conditions[1].target_keys[1]", 19, "b", `unknown target "b"; declared: none`},
				{"targets", 20, "[]", "no targets; want at least one (targets[0] is the no-match fallback)"},
			}},
		{"duplicate virtual_key", "virtual_key: b", "virtual_key: a",
			[]want{
				{"strategy.conditions[1].target_keys[1]", 19, "b]", `unknown target "b"; declared: a`},
				{"targets[1].virtual_key", 30, "@@a", `duplicate virtual_key "a" (first at targets[0], line 21); want unique names`},
			}},
		{"empty virtual_key", "virtual_key: b", `virtual_key: ""`,
			[]want{
				{"strategy.conditions[1].target_keys[1]", 19, "b", `unknown target "b"; declared: a`},
				{"targets[1].virtual_key", 30, `""`, "virtual_key is required; want a unique name for rules to use"},
			}},
		{"unknown provider", "provider: openai", "provider: mistral",
			[]want{{"targets[0].provider", 22, "mistral", `"mistral" is not a provider; want openai, anthropic, bedrock, azure, vertex or gemini`}}},
		{"provider missing and not implied", "    provider: openai\n", "",
			[]want{{"targets[0].provider", 21, "virtual_key", "provider is required; want openai, anthropic, bedrock, azure, vertex or gemini"}}},
		{"base_url not http", "base_url: https://api.openai.com/v1", "base_url: ftp://files.example.com",
			[]want{{"targets[0].base_url", 23, "ftp:", `"ftp://files.example.com" is not an http or https URL; ` + urlWant}}},
		{"base_url relative", "base_url: https://api.openai.com/v1", "base_url: /v1",
			[]want{{"targets[0].base_url", 23, "/v1", `"/v1" is not an http or https URL; ` + urlWant}}},
		{"base_url without host", "base_url: https://api.openai.com/v1", "base_url: 'https:///v1'",
			[]want{{"targets[0].base_url", 23, "'https", `"https:///v1" has no host; ` + urlWant}}},
		{"base_url query", "base_url: https://api.openai.com/v1", "base_url: https://x.example/v1?api-version=1",
			[]want{{"targets[0].base_url", 23, "https", `"https://x.example/v1?..." has a query; ` + urlWant}}},
		// A query may carry a key: it is never echoed, whatever else is wrong.
		{"base_url query with a key not echoed", "base_url: https://api.openai.com/v1", "base_url: https://x.io/v1?key=sk-Q1",
			[]want{{"targets[0].base_url", 23, "https", `"https://x.io/v1?..." has a query; ` + urlWant}}},
		{"base_url no scheme, query with a key not echoed", "base_url: https://api.openai.com/v1", "base_url: x.io/v1?key=sk-Q2",
			[]want{{"targets[0].base_url", 23, "x.io", `"x.io/v1?..." is not an http or https URL; ` + urlWant}}},
		{"base_url fragment", "base_url: https://api.openai.com/v1", "base_url: https://x.example/v1#frag",
			[]want{{"targets[0].base_url", 23, "https", `"https://x.example/v1#frag" has a fragment; ` + urlWant}}},
		{"base_url credentials not echoed", "base_url: https://api.openai.com/v1", "base_url: https://user:hunter2@x.example/v1",
			[]want{{"targets[0].base_url", 23, "https", "base_url carries credentials (user:password@); put the key in api_key and " + urlWant}}},
		{"base_url unparsable", "base_url: https://api.openai.com/v1", "base_url: 'http://[::1'",
			[]want{{"targets[0].base_url", 23, "'http", `"http://[::1" is not a valid URL; ` + urlWant}}},
		{"bedrock without region or base_url", "    region: us-east-1\n", "",
			[]want{{"targets[1].region", 30, "virtual_key", "bedrock needs region or base_url; want an AWS region such as us-east-1"}}},
		{"bedrock sigv4 without region", "    region: us-east-1\n", "    base_url: https://bedrock.example.com\n",
			[]want{{"targets[1].region", 30, "virtual_key", "region is required to sign requests with AWS keys (SigV4); want an AWS region such as us-east-1"}}},
		// The region becomes the default URL's host name: a region that
		// would move it elsewhere (bedrock-runtime.evil.example/...) is
		// refused at region, and no URL is built from it.
		{"region with a slash", "region: us-east-1", "region: evil.example/",
			[]want{{"targets[1].region", 32, "evil", `"evil.example/" is not an AWS region; want lowercase letters and digits in hyphen-separated parts, such as us-east-1`}}},
		{"region with spaces", "region: us-east-1", "region: us east 1",
			[]want{{"targets[1].region", 32, "us east", `"us east 1" is not an AWS region; want lowercase letters and digits in hyphen-separated parts, such as us-east-1`}}},
		{"region with user info", "region: us-east-1", "region: x@evil.example",
			[]want{{"targets[1].region", 32, "x@", `"x@evil.example" is not an AWS region; want lowercase letters and digits in hyphen-separated parts, such as us-east-1`}}},
		{"region upper case", "region: us-east-1", "region: US-EAST-1",
			[]want{{"targets[1].region", 32, "US", `"US-EAST-1" is not an AWS region; want lowercase letters and digits in hyphen-separated parts, such as us-east-1`}}},
		{"bedrock sigv4, region only in a host that is not AWS's", "    region: us-east-1\n", "    base_url: https://bedrock-runtime.eu-west-1.example.com\n",
			[]want{{"targets[1].region", 30, "virtual_key", "region is required to sign requests with AWS keys (SigV4); want an AWS region such as us-east-1"}}},
		{"region on openai", "provider: openai\n", "provider: openai\n    region: eu-west-1\n",
			[]want{{"targets[0].region", 23, "eu-west-1", "region is only for providers bedrock and vertex; this target's provider is openai"}}},
		{"aws key on openai", "provider: openai\n", "provider: openai\n    aws_access_key_id: AKID\n",
			[]want{{"targets[0].aws_access_key_id", 23, "AKID", "aws_access_key_id is only for provider bedrock; this target's provider is openai"}}},
		{"aws id without secret", "    aws_secret_access_key: secret\n", "",
			[]want{{"targets[1].aws_access_key_id", 33, "AKID", "aws_access_key_id is set without aws_secret_access_key; want both or neither"}}},
		{"aws secret without id", "    aws_access_key_id: AKIDEXAMPLE\n", "",
			[]want{{"targets[1].aws_secret_access_key", 33, "@@secret", "aws_secret_access_key is set without aws_access_key_id; want both or neither"}}},
		{"session token alone", "    aws_access_key_id: AKIDEXAMPLE\n    aws_secret_access_key: secret\n", "    aws_session_token: tok\n",
			[]want{{"targets[1].aws_session_token", 33, "@@tok", "aws_session_token is set without aws_access_key_id and aws_secret_access_key; want it only with them"}}},
		{"bedrock api_key and aws keys", "region: us-east-1\n", "region: us-east-1\n    api_key: brk\n",
			[]want{{"targets[1].api_key", 33, "brk", "both api_key and AWS keys are set; want one credential: api_key (a Bedrock API key) or aws_access_key_id/aws_secret_access_key"}}},
		{"anthropic_betas on openai", "provider: openai\n", "provider: openai\n    anthropic_betas: [context-1m-2025-08-07]\n",
			[]want{{"targets[0].anthropic_betas", 23, "[context", "anthropic_betas is only for providers bedrock and vertex; this target's provider is openai"}}},
		{"anthropic_betas with a comma list", "region: us-east-1\n", "region: us-east-1\n    anthropic_betas: [a-1, \"b-1,c-1\"]\n",
			[]want{{"targets[1].anthropic_betas[1]", 33, `"b-1`, `"b-1,c-1" is not a beta flag; want one flag such as interleaved-thinking-2025-05-14 (letters, digits, '-', '_' or '.')`}}},
		{"anthropic_betas empty flag", "region: us-east-1\n", "region: us-east-1\n    anthropic_betas: [\"\"]\n",
			[]want{{"targets[1].anthropic_betas[0]", 33, `""`, `"" is not a beta flag; want one flag such as interleaved-thinking-2025-05-14 (letters, digits, '-', '_' or '.')`}}},
		{"anthropic_betas twice", "region: us-east-1\n", "region: us-east-1\n    anthropic_betas: [a-1, b-1, a-1]\n",
			[]want{{"targets[1].anthropic_betas[2]", 33, "a-1]", `"a-1" is listed twice; want each flag once`}}},
		{"models empty list", `models: [gpt-4o, "gpt-5*"]`, "models: []",
			[]want{{"targets[0].models", 24, "[]", "models is empty, so the target would serve no model; omit models to serve any model, or list model ids"}}},
		{"models empty entry", `models: [gpt-4o, "gpt-5*"]`, `models: [gpt-4o, ""]`,
			[]want{{"targets[0].models[1]", 24, `""`, "model entry is empty; want an exact model id or a prefix ending in *"}}},
		{"models star inside", `models: [gpt-4o, "gpt-5*"]`, `models: [gpt-4o, "gpt-*-mini"]`,
			[]want{{"targets[0].models[1]", 24, `"gpt-*`, `"gpt-*-mini" has * before its end; want an exact model id or a prefix ending in a single *`}}},
		{"models double star", `models: [gpt-4o, "gpt-5*"]`, `models: [gpt-4o, "gpt-5**"]`,
			[]want{{"targets[0].models[1]", 24, `"gpt-5**"`, `"gpt-5**" has * before its end; want an exact model id or a prefix ending in a single *`}}},
		{"models spaces", `models: [gpt-4o, "gpt-5*"]`, `models: [gpt-4o, " gpt-5*"]`,
			[]want{{"targets[0].models[1]", 24, `" gpt`, `" gpt-5*" has surrounding spaces; want the model id without them`}}},
		{"model_map empty value", "model_map: {gpt-4o: gpt-4o-2024-08-06}", `model_map: {gpt-4o: ""}`,
			[]want{{`targets[0].model_map["gpt-4o"]`, 25, "gpt-4o:", "model_map value is empty; want the model id sent upstream"}}},
		{"model_map empty key", "model_map: {gpt-4o: gpt-4o-2024-08-06}", `model_map: {"": gpt-4o}`,
			[]want{{`targets[0].model_map[""]`, 25, `""`, "model_map key is empty; want the model id clients send"}}},
		{"target timeout 0", "timeout: 60s", "timeout: 0s",
			[]want{{"targets[0].timeout", 26, "0s", `0s is out of range; want a duration above 0, such as "60s"`}}},
		{"attempts 0", "attempts: 1,", "attempts: 0,",
			[]want{{"targets[0].retry.attempts", 27, "0,", "0 is out of range; want 1 to 10"}}},
		{"attempts 11", "attempts: 1,", "attempts: 11,",
			[]want{{"targets[0].retry.attempts", 27, "11", "11 is out of range; want 1 to 10"}}},
		{"on_status_codes 200", "on_status_codes: [503]", "on_status_codes: [503, 200]",
			[]want{{"targets[0].retry.on_status_codes[1]", 27, "200", "200 is out of range; want 400 to 599"}}},
		{"on_status_codes 600", "on_status_codes: [503]", "on_status_codes: [600]",
			[]want{{"targets[0].retry.on_status_codes[0]", 27, "600", "600 is out of range; want 400 to 599"}}},
		{"initial_backoff_ms negative", "initial_backoff_ms: 100", "initial_backoff_ms: -1",
			[]want{{"targets[0].retry.initial_backoff_ms", 27, "-1", "-1 is out of range; want 0 to 60000"}}},
		{"initial_backoff_ms too big", "initial_backoff_ms: 100", "initial_backoff_ms: 60001",
			[]want{{"targets[0].retry.initial_backoff_ms", 27, "60001", "60001 is out of range; want 0 to 60000"}}},
		{"failure_threshold 0", "failure_threshold: 5", "failure_threshold: 0",
			[]want{{"targets[0].circuit_breaker.failure_threshold", 28, "0,", "0 is out of range; want 1 or more"}}},
		{"success_threshold 0", "success_threshold: 1", "success_threshold: 0",
			[]want{{"targets[0].circuit_breaker.success_threshold", 28, "0, max", "0 is out of range; want 1 or more"}}},
		{"max_half_threshold 0", "max_half_threshold: 1", "max_half_threshold: 0",
			[]want{{"targets[0].circuit_breaker.max_half_threshold", 28, "0, time", "0 is out of range; want 1 or more"}}},
		{"breaker timeout 0", "timeout: 30s}", "timeout: 0s}",
			[]want{{"targets[0].circuit_breaker.timeout", 28, "0s}", `0s is out of range; want a duration above 0, such as "30s"`}}},
		{"max_concurrency 0", "max_concurrency: 256", "max_concurrency: 0",
			[]want{{"targets[0].concurrency.max_concurrency", 29, "0,", "0 is out of range; want 1 or more"}}},
		{"queue_size negative", "queue_size: 1000", "queue_size: -1",
			[]want{{"targets[0].concurrency.queue_size", 29, "-1", "-1 is out of range; want 0 or more"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(baseYAML, tc.old) {
				t.Fatalf("bad test: %q not in baseYAML", tc.old)
			}
			src := strings.Replace(baseYAML, tc.old, tc.new, 1)
			checkProblems(t, src, problemsOf(t, src, noEnv), tc.wants)
		})
	}
}

// TestQueueSizeZeroIsValid pins the lower bound: 0 waiters is allowed.
func TestQueueSizeZeroIsValid(t *testing.T) {
	cfg := mustParse(t, strings.Replace(baseYAML, "queue_size: 1000", "queue_size: 0", 1), noEnv)
	if got := cfg.Targets[0].Concurrency.QueueSize; got != 0 {
		t.Fatalf("queue_size %d; want 0", got)
	}
}

// TestBedrockSigV4RegionFromURL: AWS keys with a bedrock-runtime base URL
// and no region load; the adapter signs with the region the host names.
func TestBedrockSigV4RegionFromURL(t *testing.T) {
	for _, base := range []string{
		"https://bedrock-runtime.eu-west-1.amazonaws.com",
		"https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com",
		"https://bedrock-runtime.cn-north-1.amazonaws.com.cn",
	} {
		src := strings.Replace(baseYAML, "    region: us-east-1\n", "    base_url: "+base+"\n", 1)
		cfg := mustParse(t, src, noEnv)
		if got := cfg.Targets[1].BaseURL; got != base {
			t.Errorf("base_url %q, want %q", got, base)
		}
	}
	for base, want := range map[string]string{
		"https://bedrock-runtime.eu-west-1.amazonaws.com/": "eu-west-1",
		"https://bedrock-runtime.evil.example/":            "",
		"https://bedrock-runtime.x.y.amazonaws.com":        "",
		"https://bedrock-runtime.EU.amazonaws.com":         "",
		"https://example.com":                              "",
		"%":                                                "",
	} {
		if got := regionOfBedrockURL(base); got != want {
			t.Errorf("regionOfBedrockURL(%q) = %q, want %q", base, got, want)
		}
	}
}

// anthropic_betas: absent is nil (Bedrock's documented flags), [] is an
// empty list (none), a list is kept as written.
func TestBedrockAnthropicBetasDecode(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"", nil},
		{"    anthropic_betas: []\n", []string{}},
		{"    anthropic_betas: [context-1m-2025-08-07, my.flag_2]\n", []string{"context-1m-2025-08-07", "my.flag_2"}},
	} {
		cfg := mustParse(t, baseYAML+tc.line, noEnv)
		got := cfg.Targets[1].AnthropicBetas
		if (got == nil) != (tc.want == nil) || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q: %#v, want %#v", tc.line, got, tc.want)
		}
	}
}
