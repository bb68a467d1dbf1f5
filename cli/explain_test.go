package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// explainConfig exercises every kind of outcome. targets[4] (spare) serves
// any model but no rule names it: it must never be routed to.
const explainConfig = `strategy:
  mode: conditional
  conditions:
    - key: model
      value: gpt-4o
      target_key: openai
    - key: model_prefix
      value: claude-
      target_keys: [anthropic, bedrock]
    - key: user
      value: alice
      target_keys: [bedrock, openai]
    - key: metadata
      field: tier
      value: "1.0"
      target_key: anthropic
    - key: stream
      value: "true"
      target_key: anthropic
    - key: has_tools
      value: "true"
      target_key: anthropic
    - key: model_prefix
      value: mistral-
      target_keys: [openai, bedrock, mistral]
targets:
  - virtual_key: openai
    api_key: sk-test
    models: [gpt-4o, gpt-4o-mini, "gpt-5*", text-embedding-3-small]
  - virtual_key: anthropic
    api_key: ak-test
    models: ["claude-*"]
  - virtual_key: bedrock
    region: us-east-1
    api_key: bk-test
    models: ["claude-*", "mistral-large"]
    model_map: {claude-sonnet-4: us.anthropic.claude-sonnet-4-v1:0, claude-x: claude-x}
  - virtual_key: mistral
    provider: openai
    api_key: mk-test
    models: ["mistral-*"]
  - virtual_key: spare
    provider: openai
    api_key: sp-test
`

func TestExplain(t *testing.T) {
	path := writeConfig(t, "gw.yaml", explainConfig)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{
			name: "exact model rule",
			args: []string{"-model", "gpt-4o"},
			want: []string{
				`request: chat model "gpt-4o", no user, stream false, tools false, no metadata`,
				`rule: strategy.conditions[0] line 4: model=gpt-4o`,
				`chain: openai`,
				`member openai: provider openai, serves model yes, serves surface native: candidate`,
				`outcome: routes to openai`,
			},
		},
		{
			name: "prefix rule with a chain",
			args: []string{"-model", "claude-sonnet-4", "-surface", "chat"},
			want: []string{
				`request: chat model "claude-sonnet-4", no user, stream false, tools false, no metadata`,
				`rule: strategy.conditions[1] line 7: model_prefix=claude-`,
				`chain: anthropic, bedrock`,
				`member anthropic: provider anthropic, serves model yes, serves surface translated: candidate`,
				// model_map renames the model for bedrock: explain says so.
				`member bedrock: provider bedrock, serves model yes, serves surface translated: candidate, sends model "us.anthropic.claude-sonnet-4-v1:0"`,
				`outcome: routes to anthropic, then bedrock on provider failure`,
			},
		},
		{
			name: "model_map to the same id is not worth a mention",
			args: []string{"-model", "claude-x"},
			want: []string{
				`request: chat model "claude-x", no user, stream false, tools false, no metadata`,
				`rule: strategy.conditions[1] line 7: model_prefix=claude-`,
				`chain: anthropic, bedrock`,
				`member anthropic: provider anthropic, serves model yes, serves surface translated: candidate`,
				`member bedrock: provider bedrock, serves model yes, serves surface translated: candidate`,
				`outcome: routes to anthropic, then bedrock on provider failure`,
			},
		},
		{
			name: "chain members that do not serve the model are skipped",
			args: []string{"-model", "mistral-large", "-surface", "completions"},
			want: []string{
				`request: completions model "mistral-large", no user, stream false, tools false, no metadata`,
				`rule: strategy.conditions[6] line 23: model_prefix=mistral-`,
				`chain: openai, bedrock, mistral`,
				`member openai: provider openai, serves model no, serves surface native: not a candidate`,
				`member bedrock: provider bedrock, serves model yes, serves surface no: not a candidate`,
				`member mistral: provider openai, serves model yes, serves surface native: candidate`,
				`outcome: routes to mistral`,
			},
		},
		{
			name: "user rule",
			args: []string{"-model", "gpt-4o-mini", "-user", "alice"},
			want: []string{
				`request: chat model "gpt-4o-mini", user "alice", stream false, tools false, no metadata`,
				`rule: strategy.conditions[2] line 10: user=alice`,
				`chain: bedrock, openai`,
				`member bedrock: provider bedrock, serves model no, serves surface translated: not a candidate`,
				`member openai: provider openai, serves model yes, serves surface native: candidate`,
				`outcome: routes to openai`,
			},
		},
		{
			name: "an earlier rule wins over the user rule",
			args: []string{"-model", "gpt-4o", "-user", "alice"},
			want: []string{
				`request: chat model "gpt-4o", user "alice", stream false, tools false, no metadata`,
				`rule: strategy.conditions[0] line 4: model=gpt-4o`,
				`chain: openai`,
				`member openai: provider openai, serves model yes, serves surface native: candidate`,
				`outcome: routes to openai`,
			},
		},
		{
			name: "completions on an anthropic/bedrock chain is unsupported_endpoint",
			args: []string{"-model", "claude-x", "-user", "bob", "-metadata", `{"team":"search","tier":1.0}`, "-surface", "completions"},
			want: []string{
				`request: completions model "claude-x", user "bob", stream false, tools false, metadata team="search" tier="1.0"`,
				// conditions[1] (claude-) comes before the metadata rule.
				`rule: strategy.conditions[1] line 7: model_prefix=claude-`,
				`chain: anthropic, bedrock`,
				`member anthropic: provider anthropic, serves model yes, serves surface no: not a candidate`,
				`member bedrock: provider bedrock, serves model yes, serves surface no: not a candidate`,
				`outcome: 404 unsupported_endpoint: chain members serve model "claude-x" but not the completions surface`,
				`note: targets[4] (spare) serves this request but is not in the chain, so it is never called`,
			},
		},
		{
			name: "an earlier prefix rule wins over a matching metadata rule",
			args: []string{"-model", "claude-x", "-metadata", `{"tier":1.0}`, "-config", path},
			want: []string{
				`request: chat model "claude-x", no user, stream false, tools false, metadata tier="1.0"`,
				`rule: strategy.conditions[1] line 7: model_prefix=claude-`,
				`chain: anthropic, bedrock`,
				`member anthropic: provider anthropic, serves model yes, serves surface translated: candidate`,
				`member bedrock: provider bedrock, serves model yes, serves surface translated: candidate`,
				`outcome: routes to anthropic, then bedrock on provider failure`,
			},
		},
		{
			name: "metadata value as written: 1.0 is not 1",
			args: []string{"-model", "gpt-5-mini", "-metadata", `{"tier":1}`},
			want: []string{
				`request: chat model "gpt-5-mini", no user, stream false, tools false, metadata tier="1"`,
				`rule: no match → targets[0] (openai)`,
				`chain: openai`,
				`member openai: provider openai, serves model yes, serves surface native: candidate`,
				`outcome: routes to openai`,
			},
		},
		{
			name: "metadata rule (numbers compare as written)",
			args: []string{"-model", "gpt-5-mini", "-metadata", `{"x":true,"tier":1.0}`},
			want: []string{
				`request: chat model "gpt-5-mini", no user, stream false, tools false, metadata x="true" tier="1.0"`,
				`rule: strategy.conditions[3] line 13: metadata tier=1.0`,
				`chain: anthropic`,
				`member anthropic: provider anthropic, serves model no, serves surface translated: not a candidate`,
				`outcome: 404 model_not_found: no chain member serves model "gpt-5-mini"`,
				`note: targets[0] (openai) serves this request but is not in the chain, so it is never called`,
				`note: targets[4] (spare) serves this request but is not in the chain, so it is never called`,
			},
		},
		{
			name: "no match falls back to targets[0] alone",
			args: []string{"-model", "gpt-4o-mini", "-user", "bob"},
			want: []string{
				`request: chat model "gpt-4o-mini", user "bob", stream false, tools false, no metadata`,
				`rule: no match → targets[0] (openai)`,
				`chain: openai`,
				`member openai: provider openai, serves model yes, serves surface native: candidate`,
				`outcome: routes to openai`,
			},
		},
		{
			name: "model_not_found although a target outside the chain serves it",
			args: []string{"-model", "llama-3.1-70b"},
			want: []string{
				`request: chat model "llama-3.1-70b", no user, stream false, tools false, no metadata`,
				`rule: no match → targets[0] (openai)`,
				`chain: openai`,
				`member openai: provider openai, serves model no, serves surface native: not a candidate`,
				`outcome: 404 model_not_found: no chain member serves model "llama-3.1-70b"`,
				`note: targets[4] (spare) serves this request but is not in the chain, so it is never called`,
			},
		},
		{
			name: "unsupported_endpoint: embeddings on an anthropic-only chain",
			args: []string{"-model", "claude-embed", "-surface", "embeddings", "-user", "alice"},
			want: []string{
				`request: embeddings model "claude-embed", user "alice"`,
				// The user rule comes after the claude- rule; the prefix wins.
				`rule: strategy.conditions[1] line 7: model_prefix=claude-`,
				`chain: anthropic, bedrock`,
				`member anthropic: provider anthropic, serves model yes, serves surface no: not a candidate`,
				`member bedrock: provider bedrock, serves model yes, serves surface no: not a candidate`,
				`outcome: 404 unsupported_endpoint: chain members serve model "claude-embed" but not the embeddings surface`,
				`note: targets[4] (spare) serves this request but is not in the chain, so it is never called`,
			},
		},
		{
			name: "stream rule on chat",
			args: []string{"-model", "text-embedding-3-small", "-stream", "-tools"},
			want: []string{
				`request: chat model "text-embedding-3-small", no user, stream true, tools true, no metadata`,
				`rule: strategy.conditions[4] line 17: stream=true`,
				`chain: anthropic`,
				`member anthropic: provider anthropic, serves model no, serves surface translated: not a candidate`,
				`outcome: 404 model_not_found: no chain member serves model "text-embedding-3-small"`,
				`note: targets[0] (openai) serves this request but is not in the chain, so it is never called`,
				`note: targets[4] (spare) serves this request but is not in the chain, so it is never called`,
			},
		},
		{
			name: "tools rule on chat",
			args: []string{"-model", "gpt-4o-mini", "-tools"},
			want: []string{
				`request: chat model "gpt-4o-mini", no user, stream false, tools true, no metadata`,
				`rule: strategy.conditions[5] line 20: has_tools=true`,
				`chain: anthropic`,
				`member anthropic: provider anthropic, serves model no, serves surface translated: not a candidate`,
				`outcome: 404 model_not_found: no chain member serves model "gpt-4o-mini"`,
				`note: targets[0] (openai) serves this request but is not in the chain, so it is never called`,
				`note: targets[4] (spare) serves this request but is not in the chain, so it is never called`,
			},
		},
		{
			name: "stream, tools and metadata ignored on embeddings",
			// The same request on chat matches the stream rule; on
			// embeddings nothing but the model counts, and the malformed
			// header is not even parsed (docs/routing.md, 2).
			args: []string{"-model", "text-embedding-3-small", "-surface", "embeddings", "-stream", "-tools", "-metadata", `{"tier":1.0}x`},
			want: []string{
				`request: embeddings model "text-embedding-3-small", no user (ignored on embeddings: stream, tools, metadata)`,
				`rule: no match → targets[0] (openai)`,
				`chain: openai`,
				`member openai: provider openai, serves model yes, serves surface native: candidate`,
				`outcome: routes to openai`,
			},
		},
		{
			name: "images surface",
			args: []string{"-model", "gpt-image-1", "-surface", "images", "-stream"},
			want: []string{
				`request: images model "gpt-image-1", no user (ignored on images: stream)`,
				`rule: no match → targets[0] (openai)`,
				`chain: openai`,
				`member openai: provider openai, serves model no, serves surface native: not a candidate`,
				`outcome: 404 model_not_found: no chain member serves model "gpt-image-1"`,
				`note: targets[4] (spare) serves this request but is not in the chain, so it is never called`,
			},
		},
		{
			// Bedrock serves messages too: Claude through InvokeModel.
			name: "messages is served by anthropic, then bedrock",
			args: []string{"-model", "claude-sonnet-4", "-surface", "messages", "-stream", "-user", "bob"},
			want: []string{
				`request: messages model "claude-sonnet-4", user "bob", stream true, tools false, no metadata`,
				`rule: strategy.conditions[1] line 7: model_prefix=claude-`,
				`chain: anthropic, bedrock`,
				`member anthropic: provider anthropic, serves model yes, serves surface native: candidate`,
				`member bedrock: provider bedrock, serves model yes, serves surface native: candidate, sends model "us.anthropic.claude-sonnet-4-v1:0"`,
				`outcome: routes to anthropic, then bedrock on provider failure`,
			},
		},
		{
			// A model id without "anthropic." on bedrock: translated over Converse.
			name: "messages: anthropic native, then bedrock translated",
			args: []string{"-model", "claude-x", "-surface", "messages", "-stream", "-user", "bob"},
			want: []string{
				`request: messages model "claude-x", user "bob", stream true, tools false, no metadata`,
				`rule: strategy.conditions[1] line 7: model_prefix=claude-`,
				`chain: anthropic, bedrock`,
				`member anthropic: provider anthropic, serves model yes, serves surface native: candidate`,
				`member bedrock: provider bedrock, serves model yes, serves surface translated (count_tokens estimated): candidate`,
				`outcome: routes to anthropic, then bedrock on provider failure`,
			},
		},
		{
			name: "messages on an openai chain is translated",
			args: []string{"-model", "gpt-4o", "-surface", "messages"},
			want: []string{
				`request: messages model "gpt-4o", no user, stream false, tools false, no metadata`,
				`rule: strategy.conditions[0] line 4: model=gpt-4o`,
				`chain: openai`,
				`member openai: provider openai, serves model yes, serves surface translated (count_tokens estimated): candidate`,
				`outcome: routes to openai`,
			},
		},
		{
			name: "responses on an anthropic/bedrock chain is translated",
			args: []string{"-model", "claude-x", "-surface", "responses"},
			want: []string{
				`request: responses model "claude-x", no user, stream false, tools false, no metadata`,
				`rule: strategy.conditions[1] line 7: model_prefix=claude-`,
				`chain: anthropic, bedrock`,
				`member anthropic: provider anthropic, serves model yes, serves surface translated: candidate`,
				`member bedrock: provider bedrock, serves model yes, serves surface translated: candidate`,
				`outcome: routes to anthropic, then bedrock on provider failure`,
			},
		},
		{
			name: "metadata routes responses",
			args: []string{"-model", "gpt-5", "-surface", "responses", "-tools", "-metadata", `{"tier":1.0}`},
			want: []string{
				`request: responses model "gpt-5", no user, stream false, tools true, metadata tier="1.0"`,
				`rule: strategy.conditions[3] line 13: metadata tier=1.0`,
				`chain: anthropic`,
				`member anthropic: provider anthropic, serves model no, serves surface translated: not a candidate`,
				`outcome: 404 model_not_found: no chain member serves model "gpt-5"`,
				`note: targets[0] (openai) serves this request but is not in the chain, so it is never called`,
				`note: targets[4] (spare) serves this request but is not in the chain, so it is never called`,
			},
		},
		{
			name: "empty user is a user",
			args: []string{"-model", "gpt-4o-mini", "-user="},
			want: []string{
				`request: chat model "gpt-4o-mini", user "", stream false, tools false, no metadata`,
				`rule: no match → targets[0] (openai)`,
				`chain: openai`,
				`member openai: provider openai, serves model yes, serves surface native: candidate`,
				`outcome: routes to openai`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"explain", "-config", path}, tt.args...)
			code, out, errOut := run(t, args...)
			if code != 0 {
				t.Errorf("exit %d, want 0; stderr %q", code, errOut)
			}
			wantLines(t, "stdout", out, tt.want...)
			wantLines(t, "stderr", errOut)
		})
	}
}

func TestExplainBadMetadata(t *testing.T) {
	path := writeConfig(t, "gw.yaml", explainConfig)
	tests := []struct{ metadata, want string }{
		{`{"tier":null}`, `explain: -metadata: X-Gateway-Metadata: value of "tier" must be a string, number or boolean, not null`},
		{`["gold"]`, `explain: -metadata: X-Gateway-Metadata: must be a JSON object, not an array`},
		{`{"a":1,"a":2}`, `explain: -metadata: X-Gateway-Metadata: duplicate key "a"`},
	}
	for _, tt := range tests {
		code, out, errOut := run(t, "explain", "-config", path, "-model", "gpt-4o", "-metadata", tt.metadata)
		if code != ExitUsage {
			t.Errorf("%s: exit %d, want %d", tt.metadata, code, ExitUsage)
		}
		wantLines(t, "stdout", out)
		wantLines(t, "stderr", errOut, tt.want)
	}
}

func TestExplainInvalidConfig(t *testing.T) {
	path := writeConfig(t, "bad.yaml", `strategy:
  mode: conditional
  conditions:
    - key: model
      value: x
      target_key: nobody
targets:
  - virtual_key: openai
    api_key: sk-test
`)
	code, out, errOut := run(t, "explain", "-config", path, "-model", "x")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	wantLines(t, "stdout", out)
	wantLines(t, "stderr", errOut, path+`:6:19: strategy.conditions[0].target_key: unknown target "nobody"; declared: openai`)

	code, _, errOut = run(t, "explain", "-config", path+".missing", "-model", "x")
	if code != 1 {
		t.Errorf("missing: exit %d, want 1", code)
	}
	wantLines(t, "stderr", errOut, path+".missing: cannot read config: no such file or directory")
}

// TestExplainCloudMembers: explain names each cloud member's URL form,
// credential kind, deployment type and region (config.example.yaml's EU set).
func TestExplainCloudMembers(t *testing.T) {
	path := filepath.Join("..", "config.example.yaml")
	code, out, errOut := run(t, "explain", "-config", path, "-model", "eu-chat")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		`member azure-eu: provider azure (v1 API; deployment type datazone; api-key), serves model yes, serves surface native: candidate, sends model "gpt-4o-dzeu"`,
		`member vertex-eu: provider vertex (project my-eu-project; region europe-west4; Claude through rawPredict), serves model yes, serves surface translated: candidate, sends model "claude-sonnet-4-5@20250929"`,
		"outcome: routes to azure-eu, then vertex-eu, then bedrock-eu on provider failure",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
}

// TestExplainFormPerModel: a vertex member serves messages natively for a
// Claude model and translated for any other, the form the walk picks
// (provider.Pick); count_tokens is estimated only where the model cannot
// be counted.
func TestExplainFormPerModel(t *testing.T) {
	path := writeConfig(t, "forms.yaml", `strategy:
  mode: conditional
  conditions:
    - key: model_prefix
      value: eu-
      target_keys: [vertex, gemini]
targets:
  - virtual_key: vertex
    provider: vertex
    project: eu-project-1
    region: europe-west4
    models: [eu-claude, eu-gemini]
    model_map: {eu-claude: claude-sonnet-4-5@20250929, eu-gemini: google/gemini-2.5-pro}
  - virtual_key: gemini
    api_key: gk-test
`)
	for _, tc := range []struct{ model, surface, vertex, gemini string }{
		{"eu-claude", "messages", "native", "translated (count_tokens estimated)"},
		{"eu-gemini", "messages", "translated (count_tokens estimated)", "translated (count_tokens estimated)"},
		{"eu-claude", "chat", "translated", "native"},
		{"eu-gemini", "chat", "native", "native"},
		{"eu-claude", "responses", "translated", "translated"},
	} {
		code, out, errOut := run(t, "explain", "-config", path, "-model", tc.model, "-surface", tc.surface)
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		for _, want := range []string{
			"member vertex: provider vertex ", "serves surface " + tc.vertex + ": candidate",
			"member gemini: provider gemini (Gemini API OpenAI-compatible endpoint, global), serves model yes, serves surface " + tc.gemini + ": candidate",
			"outcome: routes to vertex, then gemini on provider failure",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s %s: explain output lacks %q:\n%s", tc.model, tc.surface, want, out)
			}
		}
	}
}
