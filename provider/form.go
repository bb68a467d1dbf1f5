package provider

import "github.com/switchyard/switchyard/router"

// Form is how a target serves a surface: in the surface's own API, through
// a translation to and from the chat form, or not at all
// (docs/providers.md, Providers and translation).
type Form uint8

// Forms. The zero value is FormNone.
const (
	FormNone Form = iota
	FormNative
	FormTranslated
)

var formNames = [...]string{"none", "native", "translated"}

// String returns "none", "native" or "translated", as explain shows it.
func (f Form) String() string {
	if int(f) < len(formNames) {
		return formNames[f]
	}
	return "none"
}

// FormOf returns how a target speaking adapter a at endpoint ep serves
// surface s for the model id sent upstream. Allocation-free.
//
// This version knows the native surfaces only: a provider's table row, less
// responses on an azure target on classic deployment URLs, and messages on
// bedrock and vertex for Claude models only (their adapters refuse others).
func FormOf(a Adapter, ep *Endpoint, s router.Surface, upstreamModel []byte) Form {
	if a == nil || s >= router.NumSurfaces || !a.Surfaces().Has(s) {
		return FormNone
	}
	switch AdapterOfSurface(a, s).(type) {
	case azureAdapter:
		if s == router.SurfaceResponses && ep != nil && ep.APIVersion != "" {
			return FormNone
		}
	case bedrockMessages:
		if !bedrockServesMessagesNatively(upstreamModel) {
			return FormNone
		}
	case vertexMessages:
		if !isClaude(upstreamModel) {
			return FormNone
		}
	}
	return FormNative
}
