package provider

import (
	"testing"

	"github.com/switchyard/switchyard/router"
)

// FormOf says native exactly where a target's adapter serves a surface
// today, for the model sent: an azure target on classic deployment URLs
// has no responses, bedrock and vertex serve messages for Claude only.
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
		{OpenAI, v1, router.SurfaceMessages, "gpt-4o", FormNone},
		{Anthropic, v1, router.SurfaceMessages, "claude-sonnet-4-6", FormNative},
		{Anthropic, v1, router.SurfaceEmbeddings, "claude-sonnet-4-6", FormNone},
		{Azure, v1, router.SurfaceResponses, "dep", FormNative},
		{Azure, classic, router.SurfaceResponses, "dep", FormNone},
		{Azure, classic, router.SurfaceChat, "dep", FormNative},
		{Bedrock, v1, router.SurfaceMessages, "eu.anthropic.claude-sonnet-4-6", FormNative},
		{Bedrock, v1, router.SurfaceMessages, "mistral.mistral-large", FormNone},
		{Bedrock, v1, router.SurfaceChat, "mistral.mistral-large", FormNative},
		{Vertex, v1, router.SurfaceMessages, "claude-sonnet-4-6", FormNative},
		{Vertex, v1, router.SurfaceMessages, "gemini-2.5-pro", FormNone},
		{Vertex, v1, router.SurfaceChat, "gemini-2.5-pro", FormNative},
		{Gemini, v1, router.SurfaceEmbeddings, "text-embedding-004", FormNative},
	} {
		if got := FormOf(Lookup(c.provider).Adapter, c.ep, c.surface, []byte(c.model)); got != c.want {
			t.Errorf("%s %s %s: %v, want %v", c.provider, c.surface, c.model, got, c.want)
		}
	}
	if FormOf(nil, v1, router.SurfaceChat, nil) != FormNone || FormNone.String() != "none" ||
		FormNative.String() != "native" || FormTranslated.String() != "translated" || Form(9).String() != "none" {
		t.Error("FormOf(nil) or the names")
	}
}
