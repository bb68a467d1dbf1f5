package batch_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
)

// TestDocsWorkedExample: the configuration of docs/batches.md's worked
// example loads (the residency proof passes), and every target its EU key
// can reach, in a batch or not, carries the eu label, each azure-eu member
// taking chat in a batch.
func TestDocsWorkedExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/batches.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "## Worked example")
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(text[i:])
	if i < 0 || m == nil {
		t.Fatal("no worked example in docs/batches.md")
	}
	yaml := strings.ReplaceAll(m[1], "/var/spool/switchyard", t.TempDir())
	env := map[string]string{"AZURE_EU_KEY": "a", "AZURE_EU2_KEY": "b", "GLOBEX_EU_KEY": "sy-globex-eu-0123456789abcdef",
		"REDIS_URL": "redis://127.0.0.1:6379", "OPENAI_API_KEY": "x"}
	cfg, err := config.Parse("batches.md", []byte(yaml), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	rules, targets := cfg.RouterSpecs()
	snap, err := router.Compile(rules, targets, 0)
	if err != nil {
		t.Fatal(err)
	}
	keys := cfg.KeySpecs()
	reach := snap.Reachable(&keys[0])
	if len(reach) == 0 {
		t.Fatal("the key reaches nothing")
	}
	for _, r := range reach {
		if tg := snap.Target(r.Target); tg.Residency != "eu" || !snap.ServesBatch(r.Target, router.SurfaceChat) {
			t.Errorf("the EU key reaches %s (residency %q, batch %b)", tg.Name, tg.Residency, tg.Batch)
		}
	}
}
