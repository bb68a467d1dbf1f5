package config

import (
	"strings"
	"testing"
)

// euTenant is docs/client-keys.md's example with residency labels:
// globex-eu is bound to user globex and tier gold.
const euTenant = `
strategy:
  mode: conditional
  conditions:
RULES
    - {key: model, value: gpt-4o, target_key: openai}
    - {key: model_prefix, value: claude-, target_keys: [anthropic, bedrock]}
    - {key: user, value: vip, target_key: openai}
    - {key: metadata, field: tier, value: gold, target_key: eu}
targets:
  - {virtual_key: openai, api_key: k, residency: us}
  - {virtual_key: anthropic, api_key: k, residency: us}
  - {virtual_key: bedrock, region: us-east-1, api_key: k, residency: us, models: ["claude-*"]}
  - {virtual_key: eu, provider: openai, base_url: "https://eu.example.com/v1", residency: eu}
auth:
  keys:
    - name: acme
      key: acme-key
      user: acme
      metadata: {tier: standard}
    - name: globex-eu
      key: globex-key
      user: globex
      metadata: {tier: gold}
      models: [gpt-4o-mini, mistral-large]
      residency: [eu]
`

func TestResidencyProofRefusesTheEscape(t *testing.T) {
	// The tier gold rule pins globex-eu's chat-like requests, but metadata
	// routes nothing on embeddings and images: those go to the fallback.
	probs := problemsOf(t, strings.Replace(euTenant, "RULES\n", "", 1), noEnv)
	if len(probs) != 1 {
		t.Fatalf("problems %v; want one", probs)
	}
	p := probs[0]
	for _, s := range []string{`client key "globex-eu" (residency ["eu"]) can reach target "openai" (residency "us")`,
		"through the fallback (no condition matches)",
		`POST /v1/embeddings {"model":"gpt-4o-mini"}`,
		"see switchyard explain -key globex-eu -surface embeddings -model gpt-4o-mini"} {
		if !strings.Contains(p.Message, s) {
			t.Errorf("message %q\nlacks %q", p.Message, s)
		}
	}
	if p.Path != "auth.keys[1].residency" || p.Line != 25 {
		t.Errorf("at %s line %d; want auth.keys[1].residency line 25", p.Path, p.Line)
	}
}

func TestResidencyProofAcceptsThePinnedKey(t *testing.T) {
	// A user rule matches on every surface: globex's requests all go to eu.
	src := strings.Replace(euTenant, "RULES\n", "    - {key: user, value: globex, target_key: eu}\n", 1)
	cfg := mustParse(t, src, noEnv)
	if got := cfg.Auth.Keys[1].Residency; len(got) != 1 || got[0] != "eu" || cfg.Targets[3].Residency != "eu" {
		t.Fatalf("residency not decoded: key %v target %q", got, cfg.Targets[3].Residency)
	}
	// Widening the allow-list to a claude model lets rule 1 win before the
	// user rule? No: the user rule comes first. Moving it after the model
	// rules lets gpt-4o reach openai.
	moved := strings.Replace(euTenant, "RULES\n", "", 1)
	moved = strings.Replace(moved, "      models: [gpt-4o-mini, mistral-large]\n", "", 1)
	moved = strings.Replace(moved, "    - {key: metadata, field: tier, value: gold, target_key: eu}\n",
		"    - {key: metadata, field: tier, value: gold, target_key: eu}\n    - {key: user, value: globex, target_key: eu}\n", 1)
	probs := problemsOf(t, moved, noEnv)
	if !strings.Contains(probs[0].Message, `through strategy.conditions[0] (model: gpt-4o): POST /v1/chat/completions {"model":"gpt-4o"}`) {
		t.Errorf("message %q; want the gpt-4o rule as the escape", probs[0].Message)
	}
}

func TestResidencyLabelsValidated(t *testing.T) {
	src := strings.Replace(euTenant, "RULES\n", "", 1)
	src = strings.Replace(src, "residency: [eu]", "residency: []", 1)
	src = strings.Replace(src, "residency: us}", `residency: "u s"}`, 1)
	probs := problemsOf(t, src, noEnv)
	var msgs []string
	for _, p := range probs {
		msgs = append(msgs, p.Path+": "+p.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, s := range []string{"targets[0].residency: residency label \"u s\" has spaces",
		"auth.keys[1].residency: residency is empty"} {
		if !strings.Contains(all, s) {
			t.Errorf("problems\n%s\nlack %q", all, s)
		}
	}
}

func TestResidencyGlobalPoolWarnings(t *testing.T) {
	src := `
strategy: {mode: conditional, conditions: [{key: model, value: x, target_key: a}]}
targets:
  - {virtual_key: a, provider: openai, api_key: k, residency: eu}
  - {virtual_key: b, provider: bedrock, region: eu-west-1, api_key: k, residency: eu, models: ["global.*"]}
  - {virtual_key: c, provider: bedrock, region: eu-west-1, api_key: k, residency: eu, models: [claude], model_map: {claude: global.anthropic.claude-sonnet-4-6}}
  - {virtual_key: d, provider: bedrock, region: eu-west-1, api_key: k, residency: eu, models: ["eu.*"]}
  - {virtual_key: e, provider: bedrock, region: eu-west-1, api_key: k, residency: eu}
  - {virtual_key: f, provider: bedrock, region: eu-west-1, api_key: k, models: ["global.*"]}
`
	cfg := mustParse(t, src, noEnv)
	ws := cfg.ResidencyWarnings()
	var got []string
	for _, w := range ws {
		got = append(got, w.Path)
	}
	if strings.Join(got, ",") != "targets[1],targets[2],targets[4]" {
		t.Fatalf("warnings at %v; want targets[1],targets[2],targets[4]\n%v", got, ws)
	}
	if !strings.Contains(ws[1].Message, `model "global.anthropic.claude-sonnet-4-6" (model_map["claude"])`) {
		t.Errorf("message %q", ws[1].Message)
	}
}

func TestAuditBlock(t *testing.T) {
	base := "strategy: {mode: conditional, conditions: [{key: model, value: x, target_key: a}]}\ntargets: [{virtual_key: a, provider: openai, api_key: k}]\n"
	cfg := mustParse(t, base+"audit: {path: /tmp/a.jsonl, signing_key: "+testSeed+"}\n", noEnv)
	if cfg.Audit.CheckpointEvery != DefaultAuditCheckpointEvery || cfg.Audit.MaxFileBytes != DefaultAuditMaxFileBytes {
		t.Errorf("defaults %+v", cfg.Audit)
	}
	probs := problemsOf(t, base+"audit: {signing_key: bm90LWEta2V5, checkpoint_every: 1ms, max_file_bytes: 10}\n", noEnv)
	var all []string
	for _, p := range probs {
		all = append(all, p.Path+": "+p.Message)
		if strings.Contains(p.Message, "bm90LWEta2V5") {
			t.Errorf("a problem repeats the signing key: %s", p.Message)
		}
	}
	joined := strings.Join(all, "\n")
	for _, s := range []string{"audit.path: path is required", "audit.signing_key: signing_key: 9 bytes after base64",
		"audit.checkpoint_every: 1ms is out of range", "audit.max_file_bytes"} {
		if !strings.Contains(joined, s) {
			t.Errorf("problems\n%s\nlack %q", joined, s)
		}
	}
}

// testSeed is a 32-byte Ed25519 seed in base64 (all zero bytes).
const testSeed = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

func TestResidencyGlobalPoolWarningsCloud(t *testing.T) {
	sa := `'{"type":"service_account","client_email":"a@p.iam.gserviceaccount.com","private_key":"k","token_uri":"https://oauth2.googleapis.com/token"}'`
	src := `
strategy: {mode: conditional, conditions: [{key: model, value: x, target_key: a}]}
targets:
  - {virtual_key: a, provider: openai, api_key: k, residency: eu}
  - {virtual_key: vg, provider: vertex, project: my-project-123, region: global, credentials_json: ` + sa + `, residency: eu}
  - {virtual_key: vr, provider: vertex, project: my-project-123, region: europe-west4, credentials_json: ` + sa + `, residency: eu}
  - {virtual_key: ag, provider: azure, base_url: "https://c.openai.azure.com/openai/v1", api_key: k, azure_deployment_type: global, residency: eu}
  - {virtual_key: ad, provider: azure, base_url: "https://c.openai.azure.com/openai/v1", api_key: k, azure_deployment_type: datazone, residency: eu}
  - {virtual_key: gm, provider: gemini, api_key: k, residency: eu}
  - {virtual_key: gu, provider: gemini, api_key: k}
`
	cfg := mustParse(t, src, noEnv)
	var got []string
	for _, w := range cfg.ResidencyWarnings() {
		got = append(got, w.Path+": "+w.Message)
	}
	want := []string{
		`targets[1]: target "vg" has residency "eu" but its Vertex AI region is global`,
		`targets[3]: target "ag" has residency "eu" but its azure_deployment_type is global`,
		`targets[5]: target "gm" has residency "eu" but the Gemini API serves from Google's global pool`,
	}
	if len(got) != len(want) {
		t.Fatalf("warnings:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d: %s\nwant prefix %s", i, got[i], want[i])
		}
	}
}
