package cli

import (
	"strings"
	"testing"
)

// TestExplainShowsLimits: explain -key shows the key's limits, and each
// member line its own limits and its price for the model.
func TestExplainShowsLimits(t *testing.T) {
	path := writeConfig(t, "gw.yaml", `strategy:
  mode: conditional
  conditions:
    - key: model
      value: gpt-4o
      target_keys: [openai, backup]
targets:
  - virtual_key: openai
    provider: openai
    base_url: http://127.0.0.1:1/v1
    limits: {requests_per_minute: 10000, tokens_per_minute: 2000000}
    prices: {gpt-4o: {input: 2.5, output: 10}}
  - virtual_key: backup
    provider: openai
    base_url: http://127.0.0.1:2/v1
    prices: {"gpt-*": {input: 1, output: 4}}
auth:
  keys:
    - name: acme
      key: acme-0123456789abcdef
      models: [gpt-4o]
      limits: {requests_per_minute: 600, spend_per_day_usd: 50}
`)
	code, out, errOut := run(t, "explain", "-config", path, "-model", "gpt-4o", "-key", "acme")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"limits: requests_per_minute 600, spend_per_day_usd 50 (counted in the memory store;",
		"member openai: provider openai, serves model yes, serves surface native: candidate; own limits: requests_per_minute 10000, tokens_per_minute 2000000 (skipped when out of room); price per 1M tokens: input $2.5, output $10",
		"member backup: provider openai, serves model yes, serves surface native: candidate; price per 1M tokens: input $1, output $4",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}
