package daemon

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReloadRefusedByTheResidencyProof: a reload to a config in which a
// pinned key could reach a target outside its labels fails, is logged with
// the key, target and request, and the previous config keeps serving.
func TestReloadRefusedByTheResidencyProof(t *testing.T) {
	good := `
strategy:
  mode: conditional
  conditions:
    - {key: user, value: globex, target_key: eu}
targets:
  - {virtual_key: us, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: k, residency: us}
  - {virtual_key: eu, provider: openai, base_url: "http://127.0.0.1:2/v1", api_key: k, residency: eu}
auth:
  keys:
    - {name: globex-eu, key: sy-globex, user: globex, residency: [eu]}
`
	path := filepath.Join(t.TempDir(), "gw.yaml")
	writeFile(t, path, good)
	logs := &syncBuffer{}
	d, _ := startDaemon(t, path, logs)
	before := d.Gateway().Load()
	// The user rule now comes after a model rule that sends gpt-4o to us.
	writeFile(t, path, strings.Replace(good, "    - {key: user", "    - {key: model, value: gpt-4o, target_key: us}\n    - {key: user", 1))
	if got := d.Reload(); got != "failure" {
		t.Fatalf("reload result %q; want failure", got)
	}
	if d.Gateway().Load() != before {
		t.Fatal("the refused config was swapped in")
	}
	if l := logs.String(); !strings.Contains(l, `client key \"globex-eu\" (residency [\"eu\"]) can reach target \"us\"`) ||
		!strings.Contains(l, `POST /v1/chat/completions {\"model\":\"gpt-4o\"}`) {
		t.Fatalf("logs lack the refusal:\n%s", l)
	}
}
