package provider

import (
	"github.com/switchyard/switchyard/router"
)

// Form is how a chain member serves a surface (docs/providers.md,
// Translation): in the provider's own API, through one translation to and
// from the chat form, by the gateway's own count (count_tokens on a
// provider that cannot count), or not at all.
type Form uint8

// Forms. The zero value is FormNone.
const (
	FormNone Form = iota
	FormNative
	FormTranslated
	// FormEstimate answers POST /v1/messages/count_tokens with the
	// gateway's estimate, without an upstream call.
	FormEstimate
)

var formNames = [...]string{"none", "native", "translated", "estimate"}

// String returns the form's name, as explain shows it.
func (f Form) String() string {
	if int(f) < len(formNames) {
		return formNames[f]
	}
	return "none"
}

// FormOf returns how a target whose provider adapter is a, reached at ep,
// serves surface s for upstreamModel (the id sent upstream). explain shows
// it and the walk picks its adapter with Pick, which FormOf reads, so the
// two agree on every member.
func FormOf(a Adapter, ep *Endpoint, s router.Surface, upstreamModel []byte) Form {
	_, f := Pick(a, ep, s, false, upstreamModel)
	return f
}

// CountTokensForm returns how such a target answers POST
// /v1/messages/count_tokens: FormNative (the provider counts) or
// FormEstimate.
func CountTokensForm(a Adapter, ep *Endpoint, upstreamModel []byte) Form {
	_, f := Pick(a, ep, router.SurfaceMessages, true, upstreamModel)
	return f
}

// Pick returns the Adapter that serves surface s (count_tokens when
// countTokens) for upstreamModel on a target whose provider adapter is a,
// reached at ep, and its form. For FormNone it returns a, whose
// BuildRequest refuses the surface. Allocation-free. The switch below is
// the table of docs/providers.md, Translation: a provider's native API
// wins, and every other client API goes through its chat adapter.
func Pick(a Adapter, ep *Endpoint, s router.Surface, countTokens bool, m []byte) (Adapter, Form) {
	if a == nil || s >= router.NumSurfaces {
		return a, FormNone
	}
	if s == router.SurfaceMessages && countTokens {
		return pickCount(a, m)
	}
	switch a := a.(type) {
	case OpenAIAdapter:
		switch {
		case s == router.SurfaceMessages:
			return viaChat(a, openAIMessages)
		case s < router.NumSurfaces && openAIPaths[s] != "":
			return a, FormNative
		}
	case azureAdapter:
		switch {
		case s == router.SurfaceMessages:
			return viaChat(a, azureMessages)
		case s == router.SurfaceResponses && ep != nil && ep.APIVersion != "":
			// Classic deployment URLs have no Responses API.
			return viaChat(a, azureResponses)
		case s < router.NumSurfaces && openAIPaths[s] != "":
			return a, FormNative
		}
	case geminiAdapter:
		switch s {
		case router.SurfaceChat, router.SurfaceEmbeddings:
			return a, FormNative
		case router.SurfaceMessages:
			return viaChat(a, geminiMessages)
		case router.SurfaceResponses:
			return viaChat(a, geminiResponses)
		}
	case anthropicAdapter:
		switch s {
		case router.SurfaceChat:
			return a, FormTranslated // chat over the Messages API
		case router.SurfaceMessages:
			return messagesAdapter{}, FormNative
		case router.SurfaceResponses:
			return viaChat(a, anthropicResponses)
		}
	case bedrockAdapter:
		switch s {
		case router.SurfaceChat:
			return a, FormTranslated // chat over Converse
		case router.SurfaceMessages:
			if bedrockServesMessagesNatively(m) {
				return bedrockMessages{signer: a}, FormNative // InvokeModel
			}
			return viaChat(a, bedrockMessagesViaChat)
		case router.SurfaceResponses:
			return viaChat(a, bedrockResponses)
		}
	case vertexAdapter:
		claude := isClaude(m)
		switch s {
		case router.SurfaceChat:
			if claude {
				return vertexClaude{}, FormTranslated // chat over rawPredict's Messages API
			}
			return vertexOpenAPI{}, FormNative
		case router.SurfaceMessages:
			if claude {
				return vertexMessages{}, FormNative
			}
			return viaChat(a, vertexMessagesViaChat)
		case router.SurfaceResponses:
			if claude {
				return viaChat(a, vertexClaudeResponses)
			}
			return viaChat(a, vertexOpenAPIResponses)
		}
	default:
		// An adapter outside the registry (tests): what it says it serves.
		if a.Surfaces().Has(s) {
			return a, FormNative
		}
	}
	return a, FormNone
}

// pickCount picks count_tokens: the provider's own count where it has one
// for the model, else the gateway's estimate.
func pickCount(a Adapter, m []byte) (Adapter, Form) {
	switch a := a.(type) {
	case anthropicAdapter:
		return messagesAdapter{}, FormNative
	case vertexAdapter:
		if isClaude(m) {
			return vertexMessages{}, FormNative
		}
	case bedrockAdapter:
		if bedrockServesMessagesNatively(m) {
			return bedrockMessages{signer: a}, FormNative // CountTokens
		}
	case OpenAIAdapter, azureAdapter, geminiAdapter:
	default:
		if a.Surfaces().Has(router.SurfaceMessages) {
			return a, FormNative
		}
		return a, FormNone
	}
	return countEstimate{}, FormEstimate
}

// viaChat returns t, translated, or a and FormNone when the surface has no
// translator (t is nil).
func viaChat(a Adapter, t *translated) (Adapter, Form) {
	if t == nil {
		return a, FormNone
	}
	return t, FormTranslated
}
