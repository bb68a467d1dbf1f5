package config

import (
	"strings"
	"testing"
)

const cacheYAML = `strategy:
  mode: conditional
  conditions:
    - key: model_prefix
      value: claude-
      target_keys: [anthropic, bedrock]
targets:
  - virtual_key: openai
    provider: openai
    base_url: http://127.0.0.1:1/v1
    limits: {tokens_per_minute: 1000}
    prices:
      gpt-4o: {input: 2.50, output: 10.00, cache_read: 1.25}
      gpt-4o-mini: {input: 0.15, output: 0.60}
  - virtual_key: anthropic
    provider: anthropic
    base_url: http://127.0.0.1:2
    limits: {tokens_per_minute: 1000}
    prices:
      claude-sonnet-4-5: {input: 3, output: 15, cache_read: 0.30, cache_write: 3.75}
      claude-haiku-4-5: {input: 1, output: 5, cache_read: 0.10}
  - virtual_key: bedrock
    provider: bedrock
    region: us-east-1
    api_key: k
    limits: {tokens_per_minute: 1000, count_cache_reads: true}
    prices:
      "claude-*": {input: 3, output: 15}
auth:
  keys:
    - name: acme
      key: acme-0123456789abcdef
      limits: {tokens_per_minute: 100}
    - name: globex
      key: globex-0123456789abcdef
      limits: {tokens_per_minute: 100, count_cache_reads: true}
    - name: initech
      key: initech-0123456789abcdef
      limits: {count_cache_reads: false}
`

// TestCacheCountingDefaults: count_cache_reads is false for a key unless
// set, and for a target follows its provider (openai yes, anthropic and
// bedrock no) unless set; alone it is no limit.
func TestCacheCountingDefaults(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte(cacheYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true} {
		if got := cfg.Targets[i].CountsCacheReads(); got != want {
			t.Errorf("target %s counts cache reads %v; want %v", cfg.Targets[i].VirtualKey, got, want)
		}
	}
	for i, want := range []bool{false, true, false} {
		if got := cfg.Auth.Keys[i].CountsCacheReads(); got != want {
			t.Errorf("key %s counts cache reads %v; want %v", cfg.Auth.Keys[i].Name, got, want)
		}
	}
	if cfg.Auth.Keys[2].Limits.Any() {
		t.Error("count_cache_reads alone counts as a limit")
	}
	p := cfg.Targets[1].Prices["claude-sonnet-4-5"]
	if p.Input != 3 || p.CacheRead != 0.30 || p.CacheWrite != 3.75 || !p.HasCacheRead || !p.HasCacheWrite || p.Line != 20 {
		t.Fatalf("price %+v", p)
	}
	if q := cfg.Targets[0].Prices["gpt-4o-mini"]; q.HasCacheRead || q.HasCacheWrite || q.CacheReadUSD() != 0.15 || q.CacheWriteUSD() != 0.15 {
		t.Fatalf("a price without cache prices charges them at input: %+v", q)
	}
}

// TestPriceWarnings: a price without cache_read is a warning naming the
// target and the model; without cache_write only where the provider
// reports cache writes (anthropic, bedrock, vertex), never on openai.
func TestPriceWarnings(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte(cacheYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range cfg.PriceWarnings() {
		got = append(got, p.String())
	}
	want := []string{
		`c.yaml:14:7: targets[0].prices["gpt-4o-mini"]: target "openai" prices model "gpt-4o-mini" without cache_read: cache reads are charged at its input price ($0.15 per 1M tokens); give the provider's cache prices`,
		`c.yaml:21:7: targets[1].prices["claude-haiku-4-5"]: target "anthropic" prices model "claude-haiku-4-5" without cache_write: cache writes are charged at its input price ($1 per 1M tokens); give the provider's cache prices`,
		`c.yaml:28:7: targets[2].prices["claude-*"]: target "bedrock" prices model "claude-*" without cache_read and cache_write: cache reads and cache writes are charged at its input price ($3 per 1M tokens); give the provider's cache prices`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
