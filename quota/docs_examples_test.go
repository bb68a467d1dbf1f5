package quota

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/config"
)

// TestDocsExamplesLoad: the quota blocks docs/quotas.md shows load as they
// are written (the reference block with the fields it leaves out, the
// cached tokens' blocks and the worked examples, a block of targets and
// keys alone with a rule to its first target), so the documentation
// cannot drift from the loader.
func TestDocsExamplesLoad(t *testing.T) {
	b, err := os.ReadFile("../docs/quotas.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	env := func(k string) (string, bool) {
		return map[string]string{"REDIS_URL": "rediss://:pw@redis.internal:6380/0", "ACME_KEY": "acme-0123456789abcdef",
			"GLOBEX_KEY": "globex-0123456789abcdef", "OPENAI_API_KEY": "sk-x", "CODER_KEY": "coder-0123456789abcdef",
			"BATCH_KEY": "batch-0123456789abcdef"}[k], true
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
	if len(blocks) != 5 {
		t.Fatalf("%d yaml blocks in docs/quotas.md; want the reference, the cached tokens' three and the two worked examples", len(blocks))
	}
	firstTarget := regexp.MustCompile(`virtual_key: (\S+)`)
	for i, y := range blocks {
		if i == 0 {
			y = strings.Replace(y, "targets:\n  - virtual_key: openai\n", "targets:\n  - virtual_key: openai\n    provider: openai\n", 1)
		}
		if !strings.Contains(y, "strategy:") {
			// A block of targets and keys alone: routed to its first target.
			y = "strategy:\n  mode: conditional\n  conditions:\n    - {key: model, value: m, target_key: " +
				firstTarget.FindStringSubmatch(y)[1] + "}\n" + y
		}
		cfg, err := config.Parse("docs/quotas.md", []byte(y), env)
		if err != nil {
			t.Fatalf("block %d: %v\n%s", i, err, y)
		}
		if len(cfg.Auth.Keys) > 0 && !cfg.Auth.Keys[0].Limits.Any() {
			t.Fatalf("block %d: no limits", i)
		}
	}
}
