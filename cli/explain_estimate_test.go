package cli

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/config"
)

func mustParse(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(path, []byte(estimateConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const estimateConfig = `strategy:
  mode: conditional
  conditions:
    - key: model_prefix
      value: claude-
      target_key: anthropic
targets:
  - virtual_key: anthropic
    provider: anthropic
    base_url: http://127.0.0.1:1
    prices: {"claude-*": {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}}
auth:
  keys:
    - name: coder
      key: coder-0123456789abcdef
      limits: {tokens_per_minute: 200000, tokens_per_day: 5000000}
    - name: batch
      key: batch-0123456789abcdef
      limits: {tokens_per_day: 100000, count_cache_reads: true}
`

// TestExplainShowsEstimate: explain -key says how the key's requests are
// reserved (the ratio starts at 1; a running gateway's is in /api/status),
// whether its token limits count cache reads, and the request size it
// refuses at once; member lines show cache prices.
func TestExplainShowsEstimate(t *testing.T) {
	path := writeConfig(t, "gw.yaml", estimateConfig)
	code, out, errOut := run(t, "explain", "-config", path, "-model", "claude-sonnet-4-6", "-key", "coder")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"estimate: reserves ceil(body bytes / 4 × ratio) + the completion part, ratio 1 (each gateway process starts at 1",
		"cache reads count against its token limits: no; a request reserving more than its tokens_per_minute (200000) is refused at once: 429 key_rate_limited, no Retry-After",
		"price per 1M tokens: input $3, output $15, cache read $0.3, cache write $3.75",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	code, out, _ = run(t, "explain", "-config", path, "-model", "claude-sonnet-4-6", "-key", "batch")
	if code != 0 || !strings.Contains(out, "cache reads count against its token limits: yes; a request reserving more than its tokens_per_day (100000) is refused at once: 429 key_budget_exceeded") {
		t.Fatalf("batch:\n%s", out)
	}
	// A key without limits gets no estimate line.
	if strings.Contains(estimateLine(mustParse(t, path), "nobody"), "estimate") {
		t.Fatal("an estimate line for a key the config does not have")
	}
}

// TestValidateWarnsAboutCachePrices: a price without the cache prices its
// provider bills is a validate warning naming the target and the model,
// located at the price's line; -strict fails on it; with them, none.
func TestValidateWarnsAboutCachePrices(t *testing.T) {
	cfg := strings.Replace(estimateConfig, `{input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}`, `{input: 3, output: 15, cache_read: 0.3}`, 1)
	path := writeConfig(t, "gw.yaml", cfg)
	code, out, _ := run(t, "validate", "-config", path)
	want := `warning: ` + path + `:11:14: targets[0].prices["claude-*"]: target "anthropic" prices model "claude-*" without cache_write: cache writes are charged at its input price ($3 per 1M tokens)`
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d:\n%s\nwant %s", code, out, want)
	}
	if code, out, _ := run(t, "validate", "-strict", "-config", path); code != ExitFail {
		t.Fatalf("-strict: exit %d:\n%s", code, out)
	}
	path = writeConfig(t, "ok.yaml", estimateConfig)
	if code, out, _ := run(t, "validate", "-strict", "-config", path); code != 0 || strings.Contains(out, "warning") {
		t.Fatalf("with cache prices: exit %d:\n%s", code, out)
	}
}
