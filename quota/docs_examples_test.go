package quota

import (
	"os"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/config"
)

// TestDocsExamplesLoad: the quota blocks docs/quotas.md shows load as they
// are written (the reference block with the fields it leaves out, and the
// worked example), so the documentation cannot drift from the loader.
func TestDocsExamplesLoad(t *testing.T) {
	b, err := os.ReadFile("../docs/quotas.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	env := func(k string) (string, bool) {
		return map[string]string{"REDIS_URL": "rediss://:pw@redis.internal:6380/0", "ACME_KEY": "acme-0123456789abcdef",
			"GLOBEX_KEY": "globex-0123456789abcdef", "OPENAI_API_KEY": "sk-x"}[k], true
	}
	var blocks []string
	for rest := section; ; {
		i := strings.Index(rest, "```yaml\n")
		if i < 0 {
			break
		}
		rest = rest[i+8:]
		blocks = append(blocks, rest[:strings.Index(rest, "```")])
	}
	if len(blocks) != 2 {
		t.Fatalf("%d yaml blocks in docs/quotas.md; want the reference and the worked example", len(blocks))
	}
	ref := strings.Replace(blocks[0], "targets:\n  - virtual_key: openai\n", "targets:\n  - virtual_key: openai\n    provider: openai\n", 1)
	ref = "strategy:\n  mode: conditional\n  conditions:\n    - {key: model, value: gpt-4o, target_key: openai}\n" + ref
	for i, y := range []string{ref, blocks[1]} {
		cfg, err := config.Parse("docs/quotas.md", []byte(y), env)
		if err != nil {
			t.Fatalf("block %d: %v\n%s", i, err, y)
		}
		if cfg.Auth.Keys[0].Limits == (config.Limits{}) {
			t.Fatalf("block %d: no limits", i)
		}
	}
}
