package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testSAKey = `{"type":"service_account","client_email":"gw@p.iam.gserviceaccount.com","private_key":"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n","token_uri":"https://oauth2.googleapis.com/token"}`

// cloudYAML: one target of each new provider. Line numbers below refer to it.
func cloudYAML(keyFile string) string {
	return `strategy:
  mode: conditional
  conditions:
    - key: model_prefix
      value: gpt-
      target_keys: [azure-eu, vertex-eu, gemini]
targets:
  - virtual_key: azure-eu
    provider: azure
    base_url: https://contoso-swc.openai.azure.com
    azure_api_version: 2024-10-21
    azure_deployment_type: datazone
    azure_tenant_id: 00000000-0000-0000-0000-000000000001
    azure_client_id: app-1
    azure_client_secret: s3cret-value
  - virtual_key: vertex-eu
    provider: vertex
    project: eu-proj-123
    region: europe-west4
    credentials_file: ` + keyFile + `
  - virtual_key: gemini
    api_key: g-key
`
}

func writeKey(t *testing.T, content string) string {
	p := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCloudProvidersLoad(t *testing.T) {
	cfg := mustParse(t, cloudYAML(writeKey(t, testSAKey)), noEnv)
	az, vx, gm := cfg.Targets[0], cfg.Targets[1], cfg.Targets[2]
	if az.AzureAuthority != DefaultAzureAuthority || az.APIKey != "" || az.Surfaces()&(1<<5) != 0 && az.AzureAPIVersion == "" {
		t.Errorf("azure: %+v", az.Cloud)
	}
	if vx.BaseURL != "https://europe-west4-aiplatform.googleapis.com" || string(vx.ServiceAccountKey) != testSAKey {
		t.Errorf("vertex base %q key %q", vx.BaseURL, vx.ServiceAccountKey)
	}
	if gm.Provider != ProviderGemini || gm.BaseURL != "https://generativelanguage.googleapis.com/v1beta/openai" {
		t.Errorf("gemini %q %q", gm.Provider, gm.BaseURL)
	}
	// Global region, and AZURE_OPENAI_API_KEY for an azure target without
	// a credential.
	src := strings.Replace(cloudYAML(writeKey(t, testSAKey)), "region: europe-west4", "region: global", 1)
	src = strings.Replace(src, "    azure_tenant_id: 00000000-0000-0000-0000-000000000001\n    azure_client_id: app-1\n    azure_client_secret: s3cret-value\n", "", 1)
	cfg = mustParse(t, src, func(k string) (string, bool) {
		if k == "AZURE_OPENAI_API_KEY" {
			return "az-env-key", true
		}
		return "", false
	})
	if cfg.Targets[1].BaseURL != "https://aiplatform.googleapis.com" || cfg.Targets[0].APIKey != "az-env-key" {
		t.Errorf("global base %q, azure key %q", cfg.Targets[1].BaseURL, cfg.Targets[0].APIKey)
	}
}

// A vertex target's anthropic_betas: absent is nil (the Vertex default),
// [] is an empty list (none), a list is kept as written.
func TestVertexAnthropicBetasDecode(t *testing.T) {
	key := writeKey(t, testSAKey)
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"", nil},
		{"\n    anthropic_betas: []", []string{}},
		{"\n    anthropic_betas: [claude-code-20250219, compact-2026-01-12]", []string{"claude-code-20250219", "compact-2026-01-12"}},
	} {
		src := strings.Replace(cloudYAML(key), "region: europe-west4", "region: europe-west4"+tc.line, 1)
		got := mustParse(t, src, noEnv).Targets[1].AnthropicBetas
		if (got == nil) != (tc.want == nil) || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q: %#v, want %#v", tc.line, got, tc.want)
		}
	}
}

func TestCloudProviderProblems(t *testing.T) {
	key := writeKey(t, testSAKey)
	cases := []struct {
		name, old, new string
		wants          []want
	}{
		{"azure deployment type", "azure_deployment_type: datazone", "azure_deployment_type: eu",
			[]want{{"targets[0].azure_deployment_type", 12, "eu", `"eu" is not an Azure deployment type; want standard, datazone or global`}}},
		{"azure api version", "azure_api_version: 2024-10-21", "azure_api_version: latest",
			[]want{{"targets[0].azure_api_version", 11, "latest", `"latest" is not an Azure OpenAI API version; want a date such as "2024-10-21" or "2025-04-01-preview"`}}},
		{"azure partial client credentials", "    azure_client_id: app-1\n", "",
			[]want{{"targets[0].azure_client_id", 8, "", "azure_client_id is required with Entra ID client credentials; want azure_tenant_id, azure_client_id and azure_client_secret together"}}},
		{"azure two credentials", "azure_client_secret: s3cret-value", "azure_client_secret: s3cret-value\n    api_key: k",
			[]want{{"targets[0].api_key", 16, "@@k", "both api_key and Entra ID client credentials are set; want one credential"}}},
		{"vertex region", "region: europe-west4", "region: Europe/West",
			[]want{{"targets[1].region", 19, "Europe", `"Europe/West" is not a Google Cloud region; want one such as europe-west4, or global`}}},
		{"vertex no project", "    project: eu-proj-123\n", "",
			[]want{{"targets[1].project", 16, "", "vertex needs project; want a Google Cloud project id such as my-project-123"}}},
		{"vertex api_key", "project: eu-proj-123", "project: eu-proj-123\n    api_key: nope",
			[]want{{"targets[1].api_key", 19, "nope", "api_key is only for providers openai, anthropic, bedrock, azure and gemini; this target's provider is vertex"}}},
		{"vertex anthropic_betas with a comma list", "region: europe-west4", "region: europe-west4\n    anthropic_betas: [claude-code-20250219, \"a-1,b-1\"]",
			[]want{{"targets[1].anthropic_betas[1]", 20, `"a-1`, `"a-1,b-1" is not a beta flag; want one flag such as interleaved-thinking-2025-05-14 (letters, digits, '-', '_' or '.')`}}},
		{"vertex anthropic_betas twice", "region: europe-west4", "region: europe-west4\n    anthropic_betas: [effort-2025-11-24, effort-2025-11-24]",
			[]want{{"targets[1].anthropic_betas[1]", 20, "effort-2025-11-24]", `"effort-2025-11-24" is listed twice; want each flag once`}}},
		{"anthropic_betas on gemini", "api_key: g-key", "api_key: g-key\n    anthropic_betas: []",
			[]want{{"targets[2].anthropic_betas", 23, "[]", "anthropic_betas is only for providers bedrock and vertex; this target's provider is gemini"}}},
		{"project on gemini", "api_key: g-key", "api_key: g-key\n    project: p",
			[]want{{"targets[2].project", 23, "@@p", "project is only for provider vertex; this target's provider is gemini"}}},
		{"azure key on openai", "    provider: azure\n", "    provider: openai\n",
			[]want{
				{"targets[0].azure_api_version", 11, "2024", "azure_api_version is only for provider azure; this target's provider is openai"},
				{"targets[0].azure_deployment_type", 12, "datazone", "azure_deployment_type is only for provider azure; this target's provider is openai"},
				{"targets[0].azure_tenant_id", 13, "0000", "azure_tenant_id is only for provider azure; this target's provider is openai"},
				{"targets[0].azure_client_id", 14, "app-1", "azure_client_id is only for provider azure; this target's provider is openai"},
				{"targets[0].azure_client_secret", 15, "s3cret", "azure_client_secret is only for provider azure; this target's provider is openai"},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := cloudYAML(key)
			if !strings.Contains(base, tc.old) {
				t.Fatalf("bad test: %q not in cloudYAML", tc.old)
			}
			src := strings.Replace(base, tc.old, tc.new, 1)
			checkProblems(t, src, problemsOf(t, src, noEnv), tc.wants)
		})
	}
}

func TestVertexKeyProblems(t *testing.T) {
	for content, msg := range map[string]string{
		"not json":                   "the service-account key is not JSON; want the key file Google Cloud issued (type service_account)",
		`{"type":"authorized_user"}`: `the key's type is "authorized_user"; want a service-account key (type service_account)`,
		`{"type":"service_account"}`: "the service-account key lacks client_email, private_key, token_uri; want the key file Google Cloud issued",
	} {
		src := cloudYAML(writeKey(t, content))
		checkProblems(t, src, problemsOf(t, src, noEnv), []want{{"targets[1].credentials_file", 20, "/", msg}})
	}
	src := cloudYAML("/nonexistent/sa.json")
	checkProblems(t, src, problemsOf(t, src, noEnv), []want{{"targets[1].credentials_file", 20, "/",
		`cannot read "/nonexistent/sa.json": no such file or directory; want a readable service-account key file`}})
	// The problem text never quotes the key.
	src = strings.Replace(cloudYAML(""), "credentials_file: ", `credentials_json: '{"type":"service_account","private_key":"TOPSECRET"}'`, 1)
	for _, p := range problemsOf(t, src, noEnv) {
		if strings.Contains(p.String(), "TOPSECRET") {
			t.Errorf("problem quotes the key: %s", p)
		}
	}
}
