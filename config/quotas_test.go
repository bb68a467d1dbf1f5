package config

import (
	"errors"
	"strings"
	"testing"
)

const quotaYAML = `strategy:
  mode: conditional
  conditions:
    - key: model_prefix
      value: gpt-
      target_keys: [openai, azure]
    - key: user
      value: vip
      target_key: cheap
targets:
  - virtual_key: openai
    provider: openai
    base_url: http://127.0.0.1:1/v1
    limits: {requests_per_minute: 10000, tokens_per_minute: 2000000}
    prices:
      gpt-4o: {input: 2.50, output: 10.00}
      "gpt-5*": {input: 1.25, output: 10}
  - virtual_key: azure
    provider: openai
    base_url: http://127.0.0.1:2/v1
    models: [gpt-4o]
    prices:
      gpt-4o: {input: 2.50, output: 10.00}
  - virtual_key: cheap
    provider: openai
    base_url: http://127.0.0.1:3/v1
auth:
  keys:
    - name: acme
      key: acme-0123456789abcdef
      user: acme
      models: [gpt-4o, "gpt-5*"]
      limits:
        requests_per_minute: 600
        tokens_per_minute: 200000
        tokens_per_day: 5000000
        spend_per_day_usd: 50
        spend_per_month_usd: 1000
quotas:
  store: redis
  redis:
    url: ${REDIS_URL}
    key_prefix: "sy:"
    timeout: 50ms
  on_store_failure: deny
  replicas: 3
  completion_estimate: 2048
`

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestQuotasLoad(t *testing.T) {
	cfg, err := Parse("q.yaml", []byte(quotaYAML), env(map[string]string{"REDIS_URL": "redis://:pw@127.0.0.1:6379/2"}))
	if err != nil {
		t.Fatal(err)
	}
	q := cfg.Quotas
	if q.Store != StoreRedis || q.Redis.KeyPrefix != "sy:" || q.Redis.Timeout.Milliseconds() != 50 ||
		q.OnStoreFailure != OnFailureDeny || q.Replicas != 3 || q.CompletionEstimate != 2048 {
		t.Fatalf("quotas %+v", q)
	}
	k := cfg.Auth.Keys[0].Limits
	if k != (Limits{600, 200000, 5000000, 50, 1000, nil}) {
		t.Fatalf("key limits %+v", k)
	}
	if l := cfg.Targets[0].Limits; l.RequestsPerMinute != 10000 || l.TokensPerMinute != 2000000 {
		t.Fatalf("target limits %+v", l)
	}
	if p := cfg.Targets[0].Prices["gpt-5*"]; p.Input != 1.25 || p.Output != 10 {
		t.Fatalf("price %+v", p)
	}
	// Defaults.
	cfg, err = Parse("q.yaml", []byte(strings.SplitN(quotaYAML, "quotas:", 2)[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	if q := cfg.Quotas; q.Store != StoreMemory || q.OnStoreFailure != OnFailureLocal || q.Replicas != 1 ||
		q.CompletionEstimate != DefaultCompletionEstimate || q.Redis.KeyPrefix != DefaultKeyPrefix || q.Redis.Timeout != DefaultRedisTimeout {
		t.Fatalf("defaults %+v", q)
	}
}

// TestQuotasProblems: each mistake is reported at its line and column with
// its YAML path and what is accepted.
func TestQuotasProblems(t *testing.T) {
	for _, c := range []struct {
		name, from, to string
		want           string
	}{
		{"store", "store: redis", "store: mongo", `q.yaml:40:10: quotas.store: "mongo" is not a quota store; want memory or redis`},
		{"mode", "on_store_failure: deny", "on_store_failure: panic", `q.yaml:45:21: quotas.on_store_failure: "panic" is not a failure mode; want local, deny or allow`},
		{"replicas", "replicas: 3", "replicas: 0", `q.yaml:46:13: quotas.replicas: 0 is out of range; want 1 to 10000`},
		{"unknown", "replicas: 3", "replica: 3", `q.yaml:46:3: quotas.replica: unknown key "replica" in quotas; want store, redis, on_store_failure, replicas, completion_estimate`},
		{"limit zero", "requests_per_minute: 600", "requests_per_minute: 0", `q.yaml:34:30: auth.keys[0].limits.requests_per_minute: 0 is out of range; want 1 to 1099511627776, or no requests_per_minute for no limit`},
		{"limit kind", "tokens_per_day: 5000000", "tokens_per_week: 5000000", `q.yaml:36:9: auth.keys[0].limits.tokens_per_week: unknown key "tokens_per_week" in limits; want requests_per_minute, tokens_per_minute, tokens_per_day, spend_per_day_usd, spend_per_month_usd, count_cache_reads`},
		{"spend type", "spend_per_day_usd: 50", "spend_per_day_usd: fifty", `q.yaml:37:28: auth.keys[0].limits.spend_per_day_usd: got the string "fifty"; want an amount in USD such as 2.50`},
		{"price missing output", `"gpt-5*": {input: 1.25, output: 10}`, `"gpt-5*": {input: 1.25}`, `q.yaml:17:7: targets[0].prices["gpt-5*"]: no output price; want {input: USD, output: USD} per 1M tokens`},
		{"count_cache_reads type", "spend_per_month_usd: 1000", "spend_per_month_usd: 1000\n        count_cache_reads: yes please",
			`q.yaml:39:28: auth.keys[0].limits.count_cache_reads: got the string "yes please"; want true or false`},
		{"cache price type", `"gpt-5*": {input: 1.25, output: 10}`, `"gpt-5*": {input: 1.25, output: 10, cache_read: cheap}`,
			`q.yaml:17:55: targets[0].prices["gpt-5*"].cache_read: got the string "cheap"; want an amount in USD such as 2.50`},
		{"cache price unknown", `"gpt-5*": {input: 1.25, output: 10}`, `"gpt-5*": {input: 1.25, output: 10, cached: 0.1}`,
			`q.yaml:17:43: targets[0].prices["gpt-5*"].cached: unknown key "cached" in a price; want input, output, cache_read, cache_write`},
		{"redis timeout", "timeout: 50ms", "timeout: 0s", `q.yaml:44:14: quotas.redis.timeout: 0s is out of range; want above 0s and at most 10s, such as "50ms"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := strings.Replace(quotaYAML, c.from, c.to, 1)
			_, err := Parse("q.yaml", []byte(y), env(map[string]string{"REDIS_URL": "redis://127.0.0.1:6379"}))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("no problems; want %s", c.want)
			}
			for _, p := range e.Problems {
				if p.String() == c.want {
					return
				}
			}
			t.Fatalf("problems:\n%v\nwant %s", err, c.want)
		})
	}
}

// TestRedisURLNeverQuoted: a bad Redis URL is reported without its text,
// which may hold a password.
func TestRedisURLNeverQuoted(t *testing.T) {
	for _, u := range []string{"http://user:hunter2@host:1", "redis://:hunter2@host:1/notadb", "", "hunter2"} {
		_, err := Parse("q.yaml", []byte(quotaYAML), env(map[string]string{"REDIS_URL": u}))
		if err == nil {
			t.Fatalf("%q accepted", u)
		}
		if !strings.Contains(err.Error(), "quotas.redis.url") || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%q: %v", u, err)
		}
	}
	for _, u := range []string{"redis://127.0.0.1:6379", "rediss://user:pw@redis.example:6380/1", "redis://:pw@[::1]:6379/0"} {
		if _, err := Parse("q.yaml", []byte(quotaYAML), env(map[string]string{"REDIS_URL": u})); err != nil {
			t.Fatalf("%q refused: %v", u, err)
		}
	}
}

// TestSpendNeedsPrices: a key with a spend limit that can route to a
// target and model without a price is refused, naming the key, the target
// and the model; its rules, bindings and allow-list decide what it can
// reach.
func TestSpendNeedsPrices(t *testing.T) {
	ok := map[string]string{"REDIS_URL": "redis://127.0.0.1:6379"}
	// As written (acme bound to user acme): gpt-4o and gpt-5* reach
	// openai and azure (azure serves only gpt-4o), all priced. Unbound,
	// acme can claim the vip rule to "cheap", which has no prices.
	unbound := strings.Replace(quotaYAML, "      user: acme\n", "", 1)
	_, err := Parse("q.yaml", []byte(unbound), env(ok))
	want := `q.yaml:32:7: auth.keys[0].limits: key "acme" has a spend limit and can route model "gpt-4o" to target "cheap" (strategy.conditions[1]), which has no price for it; want targets[2].prices to cover "gpt-4o"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if !strings.Contains(err.Error(), `model "gpt-5*" to target "cheap"`) {
		t.Fatalf("the pattern the key can send is not named: %v", err)
	}
	bound := quotaYAML
	// An allow-list wider than the prices: gpt-4.1 falls back to openai
	// (via model_prefix gpt-) without a price.
	wide := strings.Replace(bound, `models: [gpt-4o, "gpt-5*"]`, `models: [gpt-4o, "gpt-*"]`, 1)
	_, err = Parse("q.yaml", []byte(wide), env(ok))
	if err == nil || !strings.Contains(err.Error(), `key "acme" has a spend limit and can route model "gpt-*" to target "openai"`) {
		t.Fatalf("got %v", err)
	}
	// Without a spend limit, prices are not required.
	nospend := strings.NewReplacer("        spend_per_day_usd: 50\n", "", "        spend_per_month_usd: 1000\n", "").Replace(quotaYAML)
	if _, err := Parse("q.yaml", []byte(nospend), env(ok)); err != nil {
		t.Fatalf("a key without spend limits needs no prices: %v", err)
	}
}
