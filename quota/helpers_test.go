package quota

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/config"
)

// keyYAML is a config with key acme limited by limits (a YAML mapping
// body, indented 6) and target openai by tlimits.
func testConfig(t testing.TB, quotas, limits, tlimits string) *config.Config {
	t.Helper()
	y := `
strategy:
  mode: conditional
  conditions:
    - key: model
      value: gpt-4o
      target_keys: [openai, backup]
targets:
  - virtual_key: openai
    provider: openai
    base_url: http://127.0.0.1:1/v1
    prices:
      gpt-4o: {input: 2.5, output: 10}
` + tlimits + `
  - virtual_key: backup
    provider: openai
    base_url: http://127.0.0.1:2/v1
    prices:
      "gpt-*": {input: 1, output: 1}
auth:
  keys:
    - name: acme
      key: acme-secret-key-0123456789
      models: [gpt-4o]
` + limits + `
    - name: free
      key: free-secret-key-0123456789
` + quotas
	cfg, err := config.Parse("test.yaml", []byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

var nopLog = zerolog.Nop()

func memQuotas(t testing.TB, cfg *config.Config) (*Quotas, *Plan) {
	t.Helper()
	q := New(context.Background(), cfg, nil, zerolog.Nop())
	return q, q.Plan(cfg)
}
