package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/config"
)

// explainJSON runs `switchyard explain -json` and decodes its answer; it
// also checks that its text is what explain prints without -json.
func explainJSON(t *testing.T, path string, args ...string) Explanation {
	t.Helper()
	code, out, errOut := run(t, append([]string{"explain", "-config", path, "-json"}, args...)...)
	if code != ExitOK {
		t.Fatalf("explain -json %v: exit %d: %s", args, code, errOut)
	}
	var e Explanation
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("explain -json %v: %v\n%s", args, err, out)
	}
	_, text, _ := run(t, append([]string{"explain", "-config", path}, args...)...)
	if e.Text != text || strings.Join(e.Lines, "\n")+"\n" != text {
		t.Errorf("explain -json %v: text %q, lines %q; explain prints %q", args, e.Text, e.Lines, text)
	}
	return e
}

func TestExplainJSON(t *testing.T) {
	path := writeConfig(t, "gw.yaml", explainConfig)

	// A chain, model_map, own limits: every member field.
	e := explainJSON(t, path, "-model", "claude-sonnet-4")
	if e.Rule == nil || *e.Rule != (MatchedRule{Index: 1, Line: 7, Key: "model_prefix", Value: "claude-"}) {
		t.Errorf("rule %+v", e.Rule)
	}
	if !slices.Equal(e.Chain, []string{"anthropic", "bedrock"}) || !slices.Equal(e.Outcome.RoutesTo, []string{"anthropic", "bedrock"}) ||
		e.Outcome.Error != nil || e.Outcome.Text != "routes to anthropic, then bedrock on provider failure" {
		t.Errorf("chain %v outcome %+v", e.Chain, e.Outcome)
	}
	want := []ChainMember{
		// Chat reaches both through their own chat translation (to the
		// Messages API, to Converse).
		{Target: "anthropic", Provider: "anthropic", ServesModel: true, ServesSurface: true, Form: "translated",
			ModelSent: "claude-sonnet-4", Candidate: true},
		{Target: "bedrock", Provider: "bedrock", ServesModel: true, ServesSurface: true, Form: "translated",
			ModelSent: "us.anthropic.claude-sonnet-4-v1:0", Candidate: true},
	}
	if got := fmt.Sprintf("%+v", e.Members); got != fmt.Sprintf("%+v", want) {
		t.Errorf("members\n%s\nwant\n%s", got, fmt.Sprintf("%+v", want))
	}
	if e.Key != nil || e.Residency != nil || e.Request.User != nil || len(e.Request.Metadata) != 0 || e.Request.Surface != "chat" {
		t.Errorf("key %+v residency %+v request %+v", e.Key, e.Residency, e.Request)
	}

	// The fallback, and fields embeddings does not route on.
	e = explainJSON(t, path, "-model", "zzz", "-surface", "embeddings", "-stream", "-metadata", `{"tier":"1.0"}`)
	if e.Rule == nil || !e.Rule.Fallback || e.Rule.Index != -1 || !slices.Equal(e.Chain, []string{"openai"}) {
		t.Errorf("fallback rule %+v chain %v", e.Rule, e.Chain)
	}
	if !slices.Equal(e.Request.Ignored, []string{"stream", "metadata"}) || e.Request.Surface != "embeddings" || e.Request.User != nil {
		t.Errorf("request %+v: want stream and metadata ignored on embeddings", e.Request)
	}
	if e.Outcome.Error == nil || *e.Outcome.Error != (OutcomeError{Status: 404, Code: "model_not_found"}) || len(e.Outcome.RoutesTo) != 0 {
		t.Errorf("outcome %+v", e.Outcome)
	}
	// Members that serve the model but not the surface; targets outside
	// the chain that would serve it are notes.
	e = explainJSON(t, path, "-model", "mistral-large", "-user", "alice", "-surface", "embeddings")
	if m := e.Members; len(m) != 2 || !m[0].ServesModel || m[0].ServesSurface || m[0].Form != "none" || m[0].Candidate ||
		m[1].ServesModel || !m[1].ServesSurface || m[1].Form != "native" || m[1].Candidate ||
		e.Outcome.Error == nil || *e.Outcome.Error != (OutcomeError{Status: 404, Code: "unsupported_endpoint"}) {
		t.Errorf("members %+v outcome %+v", m, e.Outcome)
	}
	if e.Request.User == nil || *e.Request.User != "alice" || e.Rule.Key != "user" {
		t.Errorf("request %+v rule %+v", e.Request, e.Rule)
	}
	if len(e.Notes) != 2 || !strings.HasPrefix(e.Notes[0], "targets[3] (mistral) serves this request but is not in the chain") ||
		!strings.HasPrefix(e.Notes[1], "targets[4] (spare)") {
		t.Errorf("notes %q", e.Notes)
	}
}

// A key: its bindings shape the request, its allow-list can refuse it,
// and its residency labels judge each member.
func TestExplainJSONKey(t *testing.T) {
	path := writeConfig(t, "gw.yaml", euTenantConfig)
	e := explainJSON(t, path, "-model", "gpt-4o-mini", "-key", "globex-eu", "-user", "mallory", "-metadata", `{"tier":"free","region":"x"}`)
	k := e.Key
	if k == nil || k.Name != "globex-eu" || k.User == nil || *k.User != "globex" || k.Metadata["tier"] != "gold" ||
		!slices.Equal(k.Models, []string{"gpt-4o-mini"}) || !k.ModelAllowed || !slices.Equal(k.Residency, []string{"eu"}) || k.Limits != nil {
		t.Fatalf("key %+v", k)
	}
	if u := e.Request.User; u == nil || *u != "globex" || e.Request.Metadata["tier"] != "gold" || e.Request.Metadata["region"] != "x" {
		t.Errorf("request after bindings %+v", e.Request)
	}
	if len(e.Notes) != 1 || !strings.Contains(e.Notes[0], `the request's user "mallory" does not route`) {
		t.Errorf("notes %q", e.Notes)
	}
	if e.Rule == nil || e.Rule.Key != "metadata" || e.Rule.Field != "tier" || e.Rule.Value != "gold" {
		t.Errorf("rule %+v", e.Rule)
	}
	if m := e.Members; len(m) != 1 || m[0].Target != "eu" || m[0].Residency != "eu" || m[0].ResidencyAllowed == nil || !*m[0].ResidencyAllowed {
		t.Errorf("members %+v", m)
	}
	r := e.Residency
	if r == nil || r.OK || !slices.Equal(r.Labels, []string{"eu"}) ||
		fmt.Sprintf("%+v", r.Reachable) != "[{Target:openai Residency:us Via:[fallback] Outside:true} {Target:eu Residency:eu Via:[strategy.conditions[1]] Outside:false}]" {
		t.Errorf("residency proof %+v", r)
	}
	// Embeddings ignore the binding's metadata: the fallback, outside.
	e = explainJSON(t, path, "-model", "gpt-4o-mini", "-key", "globex-eu", "-surface", "embeddings")
	if m := e.Members; len(m) != 1 || m[0].Target != "openai" || m[0].ResidencyAllowed == nil || *m[0].ResidencyAllowed ||
		!slices.Equal(e.Outcome.RoutesTo, []string{"openai"}) {
		t.Errorf("embeddings: members %+v outcome %+v", m, e.Outcome)
	}
	// A model outside the allow-list: refused before routing.
	e = explainJSON(t, path, "-model", "gpt-4o", "-key", "globex-eu")
	if e.Key.ModelAllowed || e.Rule != nil || len(e.Chain) != 0 || len(e.Members) != 0 || e.Residency != nil ||
		*e.Outcome.Error != (OutcomeError{Status: 403, Code: "model_not_allowed"}) {
		t.Errorf("refused: %+v", e)
	}
}

// Over many configs and requests, the data says what the text says: the
// members and their verdicts, the chain, and an outcome that routes to the
// candidates only, in chain order.
func TestExplainJSONAgreesWithText(t *testing.T) {
	for name, src := range map[string]string{"explain": explainConfig, "eu": euTenantConfig, "cloud": cloudExplainConfig} {
		cfg, err := config.LoadUnproven(writeConfig(t, "gw.yaml", src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		keys := []string{""}
		for _, k := range cfg.Auth.Keys {
			keys = append(keys, k.Name)
		}
		n := 0
		for _, key := range keys {
			for _, model := range []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "claude-x", "mistral-large", "gemini-2.5-pro", "zzz"} {
				for _, surface := range []string{"chat", "completions", "embeddings", "images", "responses", "messages"} {
					q := ExplainRequest{Model: model, Surface: surface, Key: key, User: "alice", HasUser: true}
					e, err := ExplainData(cfg, q)
					if err != nil {
						t.Fatalf("%s %+v: %v", name, q, err)
					}
					n++
					checkAgrees(t, fmt.Sprintf("%s %+v", name, q), e)
				}
			}
		}
		t.Logf("%s: %d requests", name, n)
	}
}

func checkAgrees(t *testing.T, what string, e *Explanation) {
	t.Helper()
	if len(e.Members) != len(e.Chain) {
		t.Errorf("%s: %d members for chain %v", what, len(e.Members), e.Chain)
	}
	var cands []string
	for i, m := range e.Members {
		if m.Target != e.Chain[i] || m.Candidate != (m.ServesModel && m.ServesSurface) || m.ServesSurface != (m.Form != "none") {
			t.Errorf("%s: member %+v", what, m)
		}
		line := fmt.Sprintf("member %s: provider %s", m.Target, m.Provider)
		form := "no"
		if m.ServesSurface {
			form = m.Form
			if m.CountTokensForm == "estimate" {
				form += " (count_tokens estimated)"
			}
		}
		verdict := fmt.Sprintf("serves model %s, serves surface %s: ", yesNo(m.ServesModel), form)
		if m.Candidate {
			verdict += "candidate"
			cands = append(cands, m.Target)
		} else {
			verdict += "not a candidate"
		}
		found := false
		for _, l := range e.Lines {
			if strings.HasPrefix(l, line) && strings.Contains(l, verdict) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no line %q…%q in\n%s", what, line, verdict, e.Text)
		}
	}
	if cands == nil {
		cands = []string{}
	}
	if !slices.Equal(e.Outcome.RoutesTo, cands) || (e.Outcome.Error == nil) != (len(cands) > 0) {
		t.Errorf("%s: outcome %+v; candidates %v", what, e.Outcome, cands)
	}
	if !slices.Contains(e.Lines, "outcome: "+e.Outcome.Text) {
		t.Errorf("%s: outcome %q not in\n%s", what, e.Outcome.Text, e.Text)
	}
}

// cloudExplainConfig has a member of every cloud provider, model_maps and
// prices.
const cloudExplainConfig = `strategy:
  mode: conditional
  conditions:
    - {key: model_prefix, value: claude-, target_keys: [vr, vg, a]}
    - {key: model_prefix, value: gemini, target_keys: [gm, vr]}
    - {key: model_prefix, value: gpt, target_keys: [ag, ac, ad]}
targets:
  - {virtual_key: a, provider: anthropic, api_key: k, residency: eu, limits: {requests_per_minute: 5}, prices: {"claude-*": {input: 3, output: 15}}}
  - {virtual_key: vg, provider: vertex, project: my-project-123, region: global, credentials_json: '{"type":"service_account","client_email":"a@p.iam.gserviceaccount.com","private_key":"k","token_uri":"https://oauth2.googleapis.com/token"}', residency: eu}
  - {virtual_key: vr, provider: vertex, project: my-project-123, region: europe-west4, credentials_json: '{"type":"service_account","client_email":"a@p.iam.gserviceaccount.com","private_key":"k","token_uri":"https://oauth2.googleapis.com/token"}', residency: eu, model_map: {claude-x: claude-x@2025}}
  - {virtual_key: ag, provider: azure, base_url: "https://c.openai.azure.com/openai/v1", api_key: k, azure_deployment_type: global, residency: eu}
  - {virtual_key: ac, provider: azure, base_url: "https://c.openai.azure.com", azure_api_version: "2024-10-21", api_key: k, model_map: {gpt-4o: dep1}}
  - {virtual_key: ad, provider: azure, base_url: "https://c.openai.azure.com/openai/v1", azure_tenant_id: t, azure_client_id: c, azure_client_secret: s, azure_deployment_type: datazone, residency: eu}
  - {virtual_key: gm, provider: gemini, api_key: k, residency: eu}
auth:
  keys:
    - {name: k1, key: aaaaaaaaaaaaaaaaaaaaaaaaaa, residency: [eu], limits: {tokens_per_minute: 1000}}
    - {name: k2, key: bbbbbbbbbbbbbbbbbbbbbbbbbb, user: bob, metadata: {tier: gold}, models: ["claude-*"]}
`

// On messages each member says how it answers count_tokens: counted by the
// provider, or the gateway's estimate; on other surfaces nothing.
func TestExplainJSONCountTokensForm(t *testing.T) {
	path := writeConfig(t, "gw.yaml", explainConfig)
	for _, tc := range []struct{ model, surface, anthropic, bedrock string }{
		{"claude-sonnet-4", "messages", "native", "native"}, // bedrock sends us.anthropic.…
		{"claude-x", "messages", "native", "estimate"},      // bedrock sends claude-x: no count there
		{"claude-x", "chat", "", ""},
	} {
		e := explainJSON(t, path, "-model", tc.model, "-surface", tc.surface)
		if m := e.Members; len(m) != 2 || m[0].CountTokensForm != tc.anthropic || m[1].CountTokensForm != tc.bedrock {
			t.Errorf("%s %s: %+v", tc.model, tc.surface, m)
		}
	}
}

// Cloud members: the detail, the deployment a classic azure URL is sent,
// and responses, which azure serves natively on the v1 API only and
// translated on classic URLs.
func TestExplainJSONCloud(t *testing.T) {
	path := writeConfig(t, "gw.yaml", cloudExplainConfig)
	e := explainJSON(t, path, "-model", "gpt-4o", "-surface", "responses", "-key", "k1")
	m := e.Members
	if len(m) != 3 || m[0].Form != "native" || m[1].Form != "translated" || !m[1].ServesSurface || m[1].ModelSent != "dep1" ||
		m[1].Detail != "classic deployment URL, deployment dep1, api-version 2024-10-21; api-key" ||
		m[2].Detail != "v1 API; deployment type datazone; Entra ID token" || m[1].ResidencyAllowed == nil || *m[1].ResidencyAllowed {
		t.Errorf("members %+v", m)
	}
	if !slices.Equal(e.Outcome.RoutesTo, []string{"ag", "ac", "ad"}) || e.Key.Limits["tokens_per_minute"] != 1000 {
		t.Errorf("outcome %+v key %+v", e.Outcome, e.Key)
	}
	e = explainJSON(t, path, "-model", "claude-x", "-key", "k1")
	if m := e.Members; len(m) != 3 || m[0].ModelSent != "claude-x@2025" || m[2].Price == nil || *m[2].Price != (Price{Input: 3, Output: 15, CacheRead: 3, CacheWrite: 3}) ||
		m[2].Limits["requests_per_minute"] != 5 || m[0].Price != nil {
		t.Errorf("members %+v", m)
	}
}
