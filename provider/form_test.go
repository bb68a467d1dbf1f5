package provider

import (
	"fmt"
	"testing"

	"github.com/switchyard/switchyard/router"
)

// TestPick reads like the table of docs/providers.md, Translation: for
// each provider, surface and model, the form and the adapter the walk
// uses.
func TestPick(t *testing.T) {
	v1, classic := &Endpoint{}, &Endpoint{APIVersion: "2024-10-21"}
	const (
		chat, messages, responses, embeddings = router.SurfaceChat, router.SurfaceMessages, router.SurfaceResponses, router.SurfaceEmbeddings
	)
	claude, gemini, llama := []byte("claude-sonnet-4-5@20250929"), []byte("google/gemini-2.5-flash"), []byte("meta.llama3-70b-instruct-v1:0")
	bedrockClaude := []byte("eu.anthropic.claude-sonnet-4-5-20250929-v1:0")
	// viaResponses is what a member without the Responses API gets: the
	// translation once responses has a translator, else nothing.
	viaResponses := func(t *translated) (Adapter, Form) {
		if clientAPIs[responses] == nil {
			return nil, FormNone
		}
		return t, FormTranslated
	}
	type row struct {
		provider string
		ep       *Endpoint
		s        router.Surface
		count    bool
		model    []byte
		adapter  Adapter // nil: the provider's own adapter (FormNone)
		form     Form
	}
	rows := []row{
		{OpenAI, v1, chat, false, gemini, OpenAIAdapter{}, FormNative},
		{OpenAI, v1, responses, false, gemini, OpenAIAdapter{}, FormNative},
		{OpenAI, v1, embeddings, false, gemini, OpenAIAdapter{}, FormNative},
		{OpenAI, v1, messages, false, claude, openAIMessages, FormTranslated},
		{OpenAI, v1, messages, true, claude, countEstimate{}, FormEstimate},
		{Azure, v1, chat, false, gemini, azureAdapter{}, FormNative},
		{Azure, v1, responses, false, gemini, azureAdapter{}, FormNative},
		{Azure, classic, chat, false, gemini, azureAdapter{}, FormNative},
		{Azure, classic, messages, false, gemini, azureMessages, FormTranslated},
		{Azure, classic, messages, true, gemini, countEstimate{}, FormEstimate},
		{Gemini, v1, chat, false, gemini, geminiAdapter{}, FormNative},
		{Gemini, v1, embeddings, false, gemini, geminiAdapter{}, FormNative},
		{Gemini, v1, messages, false, gemini, geminiMessages, FormTranslated},
		{Gemini, v1, messages, true, gemini, countEstimate{}, FormEstimate},
		{Gemini, v1, router.SurfaceImages, false, gemini, nil, FormNone},
		{Anthropic, v1, chat, false, claude, anthropicAdapter{}, FormTranslated},
		{Anthropic, v1, messages, false, claude, messagesAdapter{}, FormNative},
		{Anthropic, v1, messages, true, claude, messagesAdapter{}, FormNative},
		{Anthropic, v1, embeddings, false, claude, nil, FormNone},
		{Bedrock, v1, chat, false, claude, bedrockAdapter{}, FormTranslated},
		{Bedrock, v1, messages, false, llama, bedrockMessagesViaChat, FormTranslated},
		{Bedrock, v1, messages, true, llama, countEstimate{}, FormEstimate},
		{Bedrock, v1, messages, false, bedrockClaude, bedrockMessages{}, FormNative},
		{Bedrock, v1, messages, true, bedrockClaude, bedrockMessages{}, FormNative},
		{Vertex, v1, chat, false, claude, vertexClaude{}, FormTranslated},
		{Vertex, v1, chat, false, gemini, vertexOpenAPI{}, FormNative},
		{Vertex, v1, messages, false, claude, vertexMessages{}, FormNative},
		{Vertex, v1, messages, true, claude, vertexMessages{}, FormNative},
		{Vertex, v1, messages, false, gemini, vertexMessagesViaChat, FormTranslated},
		{Vertex, v1, messages, true, gemini, countEstimate{}, FormEstimate},
	}
	for _, r := range []struct {
		provider string
		ep       *Endpoint
		model    []byte
		t        *translated
	}{{Azure, classic, gemini, azureResponses}, {Gemini, v1, gemini, geminiResponses}, {Anthropic, v1, claude, anthropicResponses},
		{Bedrock, v1, llama, bedrockResponses}, {Vertex, v1, claude, vertexClaudeResponses}, {Vertex, v1, gemini, vertexOpenAPIResponses}} {
		a, f := viaResponses(r.t)
		rows = append(rows, row{r.provider, r.ep, responses, false, r.model, a, f})
	}
	for _, r := range rows {
		p := Lookup(r.provider)
		got, form := Pick(p.Adapter, r.ep, r.s, r.count, r.model)
		want := r.adapter
		if want == nil {
			want = p.Adapter
		}
		if form != r.form || fmt.Sprintf("%T %p", got, pointer(got)) != fmt.Sprintf("%T %p", want, pointer(want)) {
			t.Errorf("%s %v count=%v %s: %T %s, want %T %s", r.provider, r.s, r.count, r.model, got, form, want, r.form)
		}
		if r.count || r.form == FormNone {
			continue
		}
		if f := FormOf(p.Adapter, r.ep, r.s, r.model); f != r.form {
			t.Errorf("%s %v %s: FormOf %s, Pick %s", r.provider, r.s, r.model, f, r.form)
		}
		if !got.Surfaces().Has(r.s) {
			t.Errorf("%s %v: picked %T, which does not serve it", r.provider, r.s, got)
		}
	}
}

// pointer is the *translated a holds, or nil: translated adapters are
// told apart by identity.
func pointer(a Adapter) *translated {
	t, _ := a.(*translated)
	return t
}

// TestPickAgreesWithRegistry: a provider's surface set (what routing makes
// it a candidate for) is exactly where Pick has an adapter, for every
// model: the walk never gets a member it would refuse, and explain, which
// reads FormOf, never says "routes to" one.
func TestPickAgreesWithRegistry(t *testing.T) {
	models := [][]byte{[]byte("claude-sonnet-4-5"), []byte("claude-x@1"), []byte("anthropic.claude-3-haiku"), []byte("gpt-4o"),
		[]byte("google/gemini-2.5-pro"), []byte("mistral.mistral-large"), []byte("")}
	for _, p := range All() {
		for _, ep := range []*Endpoint{{}, {APIVersion: "2024-10-21"}} {
			for s := router.Surface(0); s < router.NumSurfaces; s++ {
				want := p.Surfaces.Has(s)
				if p.Name == Azure && ep.APIVersion != "" && s == router.SurfaceResponses {
					// config drops it for classic URLs unless translated.
					want = TranslatedSurfaces().Has(s)
				}
				for _, m := range models {
					if got := FormOf(p.Adapter, ep, s, m) != FormNone; got != want {
						t.Errorf("%s (api version %q) %v %q: served %v, registry says %v", p.Name, ep.APIVersion, s, m, got, want)
					}
					if s == router.SurfaceMessages && want {
						if f := CountTokensForm(p.Adapter, ep, m); f != FormNative && f != FormEstimate {
							t.Errorf("%s %q: count_tokens %s", p.Name, m, f)
						}
					}
				}
			}
			if !p.Surfaces.Has(router.SurfaceChat) || !p.Surfaces.Has(router.SurfaceMessages) {
				t.Errorf("%s must serve chat and messages", p.Name)
			}
		}
	}
}

// TestFormOf: the form explain shows, model by model: native where the
// provider speaks the surface for the model sent, translated where the
// member serves it over chat, none where it does not serve it at all.
func TestFormOf(t *testing.T) {
	classic, v1 := &Endpoint{APIVersion: "2024-10-21"}, &Endpoint{}
	for _, c := range []struct {
		provider string
		ep       *Endpoint
		surface  router.Surface
		model    string
		want     Form
	}{
		{OpenAI, v1, router.SurfaceResponses, "gpt-4o", FormNative},
		{OpenAI, v1, router.SurfaceMessages, "gpt-4o", FormTranslated},
		{Anthropic, v1, router.SurfaceMessages, "claude-sonnet-4-6", FormNative},
		{Anthropic, v1, router.SurfaceResponses, "claude-sonnet-4-6", FormTranslated},
		{Anthropic, v1, router.SurfaceEmbeddings, "claude-sonnet-4-6", FormNone},
		{Azure, v1, router.SurfaceResponses, "dep", FormNative},
		{Azure, classic, router.SurfaceResponses, "dep", FormTranslated},
		{Azure, classic, router.SurfaceChat, "dep", FormNative},
		{Bedrock, v1, router.SurfaceMessages, "eu.anthropic.claude-sonnet-4-6", FormNative},
		{Bedrock, v1, router.SurfaceMessages, "mistral.mistral-large", FormTranslated},
		{Bedrock, v1, router.SurfaceChat, "mistral.mistral-large", FormTranslated},
		{Vertex, v1, router.SurfaceMessages, "claude-sonnet-4-6", FormNative},
		{Vertex, v1, router.SurfaceMessages, "gemini-2.5-pro", FormTranslated},
		{Vertex, v1, router.SurfaceChat, "gemini-2.5-pro", FormNative},
		{Gemini, v1, router.SurfaceEmbeddings, "text-embedding-004", FormNative},
		{Gemini, v1, router.SurfaceImages, "imagen", FormNone},
	} {
		if got := FormOf(Lookup(c.provider).Adapter, c.ep, c.surface, []byte(c.model)); got != c.want {
			t.Errorf("%s %s %s: %v, want %v", c.provider, c.surface, c.model, got, c.want)
		}
	}
	if FormOf(nil, v1, router.SurfaceChat, nil) != FormNone || FormNone.String() != "none" || FormNative.String() != "native" ||
		FormTranslated.String() != "translated" || FormEstimate.String() != "estimate" || Form(9).String() != "none" {
		t.Error("FormOf(nil) or the names")
	}
}
