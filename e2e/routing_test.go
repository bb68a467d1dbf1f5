package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/daemon"
)

// gpt-4o matches rule 0 and goes to the openai mock alone, with the model
// pinned by model_map; the OpenAI-compatible body comes back as the mock
// wrote it.
func TestGPT4oGoesToOpenAI(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		e := newEnv(t)
		r := e.chat(t, chatParams("gpt-4o"), stream)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.content != mockContent || r.finish != "stop" {
			t.Errorf("content %q finish %q, want %q stop", r.content, r.finish, mockContent)
		}
		if r.model != openaiPinnedID {
			t.Errorf("response model %q, want the pinned %q the upstream received", r.model, openaiPinnedID)
		}
		wantHeaders(t, r.header, "openai", "openai", openaiPinnedID, "1", "0")
		e.wantCalls(t, 1, 0, 0, 0)
		got := e.openai.last(t)
		if got.uri != "/v1/chat/completions" {
			t.Errorf("openai mock got %s", got.uri)
		}
		var body struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		if err := json.Unmarshal(got.body, &body); err != nil || body.Model != openaiPinnedID || body.Stream != stream {
			t.Errorf("openai mock body %s (err %v): want model %q stream %v", got.body, err, openaiPinnedID, stream)
		}
	})
}

// claude-sonnet-4-6 matches rule 1 and goes to anthropic, the chain's
// first member; the Messages answer reaches openai-go as a chat completion
// (a stream: chunks that accumulate to the text and end cleanly).
func TestClaudeGoesToAnthropic(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		e := newEnv(t)
		r := e.chat(t, chatParams(claudeModel), stream)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.content != anthropicText() || r.finish != "stop" {
			t.Errorf("content %q finish %q, want %q stop", r.content, r.finish, anthropicText())
		}
		if r.model != claudeModel {
			t.Errorf("response model %q, want %q", r.model, claudeModel)
		}
		wantHeaders(t, r.header, "anthropic", "anthropic", claudeModel, "1", "1")
		e.wantCalls(t, 0, 1, 0, 0)
		got := e.anth.last(t)
		var body struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
			System any    `json:"system"`
		}
		if err := json.Unmarshal(got.body, &body); err != nil || body.Model != claudeModel || body.Stream != stream {
			t.Errorf("anthropic mock body %s (err %v): want model %q stream %v", got.body, err, claudeModel, stream)
		}
		if !strings.Contains(string(got.body), "Be brief.") {
			t.Errorf("anthropic mock body lost the system prompt: %s", got.body)
		}
	})
}

// user vip (rule 2) reaches openai; tier gold (rule 3) reaches eu; with
// both, the earlier rule wins; with neither, targets[0] serves the model.
func TestUserAndMetadataRules(t *testing.T) {
	gold := option.WithHeader("X-Gateway-Metadata", `{"tier":"gold"}`)
	vip := func(model string) openai.ChatCompletionNewParams {
		p := chatParams(model)
		p.User = openai.String("vip")
		return p
	}
	for _, tc := range []struct {
		name    string
		params  openai.ChatCompletionNewParams
		opts    []option.RequestOption
		target  string
		rule    string
		toEU    bool
		content string
	}{
		{"user vip", vip(sharedModel), nil, "openai", "2", false, mockContent},
		{"tier gold", chatParams(sharedModel), []option.RequestOption{gold}, "eu", "3", true, mockContent},
		{"vip and gold: first rule wins", vip(sharedModel), []option.RequestOption{gold}, "openai", "2", false, mockContent},
		{"gpt-4o and gold: model rule first", chatParams("gpt-4o"), []option.RequestOption{gold}, "openai", "0", false, mockContent},
		{"tier silver: no match, targets[0]", chatParams(sharedModel), []option.RequestOption{option.WithHeader("X-Gateway-Metadata", `{"tier":"silver"}`)}, "openai", "fallback", false, mockContent},
		{"no user, no metadata: targets[0]", chatParams(sharedModel), nil, "openai", "fallback", false, mockContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				e := newEnv(t)
				r := e.chat(t, tc.params, stream, tc.opts...)
				if r.err != nil {
					t.Fatal(r.err)
				}
				if r.content != tc.content {
					t.Errorf("content %q, want %q", r.content, tc.content)
				}
				wantHeaders(t, r.header, tc.target, "openai", "", "1", tc.rule)
				if tc.toEU {
					e.wantCalls(t, 0, 0, 0, 1)
				} else {
					e.wantCalls(t, 1, 0, 0, 0)
				}
			})
		})
	}
}

// mistral-large matches no rule: its chain is [targets[0]] = [openai],
// which does not serve it, so the client gets 404 model_not_found and no
// upstream is called, although eu, a target outside the chain, serves it.
func TestUnmatchedModelIsNotFound(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		e := newEnv(t)
		r := e.chat(t, chatParams(unmatchedModel), stream)
		ae := apiError(t, r.err)
		if ae.StatusCode != http.StatusNotFound || ae.Code != "model_not_found" || ae.Type != "invalid_request_error" {
			t.Errorf("got %d type %q code %q, want 404 invalid_request_error model_not_found", ae.StatusCode, ae.Type, ae.Code)
		}
		if !strings.Contains(ae.Message, unmatchedModel) {
			t.Errorf("message %q does not name the model", ae.Message)
		}
		if h := r.header; h != nil && h.Get("X-Gateway-Rule") != "fallback" {
			t.Errorf("X-Gateway-Rule = %q, want fallback", h.Get("X-Gateway-Rule"))
		}
		e.wantCalls(t, 0, 0, 0, 0)
	})
}

// When targets[0] serves mistral-large, the unmatched request goes there
// alone (never to eu, which serves it too).
func TestUnmatchedModelGoesToFirstTarget(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		e := newEnvWith(t, envOptions{openaiModels: "[gpt-4o, gpt-4o-mini, \"mistral-*\"]"})
		r := e.chat(t, chatParams(unmatchedModel), stream)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.content != mockContent || r.model != unmatchedModel {
			t.Errorf("content %q model %q, want %q %q", r.content, r.model, mockContent, unmatchedModel)
		}
		wantHeaders(t, r.header, "openai", "openai", unmatchedModel, "1", "fallback")
		e.wantCalls(t, 1, 0, 0, 0)
	})
}

// GET /v1/models lists the exact ids a model-only request routes to a
// member serving it; patterns ("claude-*") are not listed, nor is
// mistral-large, which only eu (outside its chain) serves. No upstream is
// asked.
func TestModelsList(t *testing.T) {
	e := newEnv(t)
	page, err := e.client.Models.List(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		if m.Object != "model" {
			t.Errorf("model %q has object %q", m.ID, m.Object)
		}
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	if want := []string{claudeModel, "gpt-4o", "gpt-4o-mini"}; !slices.Equal(ids, want) {
		t.Errorf("models %v, want %v", ids, want)
	}
	e.wantCalls(t, 0, 0, 0, 0)
}

// A reload (SIGHUP's work) swaps the rules in at once, and keeps the 429
// park of anthropic, whose provider, base URL and key did not change,
// although its timeout did.
func TestReloadKeepsParkAndAppliesRules(t *testing.T) {
	e := newEnv(t)
	e.anth.failWith(&anthropicFailure{status: 429, typ: "rate_limit_error", msg: "rate limited", retryAfter: retryAfterParks})
	r := e.chat(t, chatParams(claudeModel), false)
	wantBedrockAnswered(t, e, r, false, "2")
	e.anth.failWith(nil)
	if r := e.chat(t, chatParams(unmatchedModel), false); r.err == nil {
		t.Fatal("mistral-large served before the reload")
	}

	e.writeConfig(t, envOptions{anthropic: "    timeout: 4s", openaiModels: `[gpt-4o, gpt-4o-mini, "mistral-*"]`})
	if got := e.d.Reload(); got != daemon.ReloadSuccess {
		t.Fatalf("Reload = %q, want %q; logs:\n%s", got, daemon.ReloadSuccess, e.logs)
	}
	r = e.chat(t, chatParams(unmatchedModel), false)
	if r.err != nil {
		t.Fatalf("mistral-large after the reload: %v", r.err)
	}
	wantHeaders(t, r.header, "openai", "openai", unmatchedModel, "1", "fallback")
	r = e.chat(t, chatParams(claudeModel), true)
	wantBedrockAnswered(t, e, r, true, "1")
	e.wantCalls(t, 1, 1, 2, 0)
}

// anthropic and bedrock serve chat only: claude-sonnet-4-6 on the
// completions and embeddings surfaces is 404 unsupported_endpoint with no
// upstream called, while gpt-4o's rule serves them on openai.
func TestSurfaces(t *testing.T) {
	e := newEnv(t)
	_, err := e.client.Completions.New(testCtx(t), openai.CompletionNewParams{
		Model: claudeModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")}})
	if ae := apiError(t, err); ae.StatusCode != http.StatusNotFound || ae.Code != "unsupported_endpoint" {
		t.Errorf("completions: got %d %q, want 404 unsupported_endpoint", ae.StatusCode, ae.Code)
	}
	_, err = e.client.Embeddings.New(testCtx(t), openai.EmbeddingNewParams{
		Model: claudeModel, Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")}})
	if ae := apiError(t, err); ae.StatusCode != http.StatusNotFound || ae.Code != "unsupported_endpoint" {
		t.Errorf("embeddings: got %d %q, want 404 unsupported_endpoint", ae.StatusCode, ae.Code)
	}
	e.wantCalls(t, 0, 0, 0, 0)

	var resp *http.Response
	emb, err := e.client.Embeddings.New(testCtx(t), openai.EmbeddingNewParams{
		Model: "gpt-4o", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")}},
		option.WithResponseInto(&resp), option.WithHeader("X-Request-Id", "e2e-req-1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.Data) != 1 || len(emb.Data[0].Embedding) == 0 {
		t.Errorf("embedding %s", emb.RawJSON())
	}
	wantHeaders(t, resp.Header, "openai", "openai", openaiPinnedID, "1", "0")
	if got := resp.Header.Get("X-Request-Id"); got != "e2e-req-1" {
		t.Errorf("X-Request-Id = %q, want the client's e2e-req-1 echoed", got)
	}
	if got := e.openai.last(t).uri; got != "/v1/embeddings" {
		t.Errorf("openai mock got %s", got)
	}
	e.wantCalls(t, 1, 0, 0, 0)
}
