package cli

// Explanation is explain's report as data: what `switchyard explain -json`
// prints and what the console's GET /api/explain answers, field by field
// in docs/routing.md (Explain as data). Text and Lines are the text report,
// unchanged; the other fields say the same in a form a CI job can assert on
// with jq. Empty lists are [] and absent objects null, never left out.
type Explanation struct {
	// Request is the request as routing reads it: the key's bindings
	// applied (before them when the key's allow-list refuses the model).
	Request RequestRead `json:"request"`
	// Key is the client key explained (-key); null without one.
	Key *KeyUsed `json:"key"`
	// Rule is the matched condition, or the fallback; null when the
	// request is refused before routing (model_not_allowed).
	Rule *MatchedRule `json:"rule"`
	// Chain names the rule's members in order; [] when not routed.
	Chain []string `json:"chain"`
	// Members describes each chain member, in chain order.
	Members []ChainMember `json:"members"`
	// Outcome is what a walk over healthy members gives.
	Outcome Outcome `json:"outcome"`
	// Residency is the load-time proof for a key with residency; null
	// otherwise.
	Residency *ResidencyProof `json:"residency"`
	// Notes are the report's "note:" lines, without the prefix.
	Notes []string `json:"notes"`
	// Text is the text report, one fact a line, each ending in "\n".
	Text string `json:"text"`
	// Lines is Text split into lines.
	Lines []string `json:"lines"`
}

// RequestRead is the described request as the router sees it.
type RequestRead struct {
	// Surface is chat, completions, embeddings, images, responses or
	// messages.
	Surface string `json:"surface"`
	Model   string `json:"model"`
	// User is the user routing sees (a key's bound user replaces the
	// request's); null when the request has none.
	User *string `json:"user"`
	// Stream and Tools are the request's flags (routing ignores them on
	// embeddings and images: see Ignored).
	Stream bool `json:"stream"`
	Tools  bool `json:"tools"`
	// Metadata is the X-Gateway-Metadata entries routing sees, the key's
	// bound entries replacing the header's; {} when none.
	Metadata map[string]string `json:"metadata"`
	// Ignored names the fields given that this surface does not route on
	// (stream, tools, metadata on embeddings and images); [] when none.
	Ignored []string `json:"ignored"`
}

// KeyUsed is the client key a request is explained for.
type KeyUsed struct {
	Name string `json:"name"`
	// User is the key's bound user; null when unbound.
	User *string `json:"user"`
	// Metadata is the key's bound metadata entries; {} when none.
	Metadata map[string]string `json:"metadata"`
	// Models is the key's allow-list; null allows any model.
	Models []string `json:"models"`
	// ModelAllowed is false when the allow-list refuses the model (then
	// the outcome is 403 model_not_allowed, before routing).
	ModelAllowed bool `json:"model_allowed"`
	// Residency is the key's residency labels; null when unrestricted.
	Residency []string `json:"residency"`
	// Limits are the key's limits by name (requests_per_minute,
	// tokens_per_day, spend_per_day_usd, …); null when it has none.
	Limits map[string]float64 `json:"limits"`
}

// MatchedRule is the strategy condition the request matched, or the
// fallback (no condition matched: targets[0] alone).
type MatchedRule struct {
	// Fallback is true when no condition matched; Index is then -1,
	// Line 0 and Key, Field and Value "".
	Fallback bool `json:"fallback"`
	// Index is the condition's 0-based index, as in strategy.conditions[N].
	Index int `json:"index"`
	// Line is the condition's line in the config file.
	Line int `json:"line"`
	// Key is model, model_prefix, user, stream, has_tools or metadata;
	// Field is the metadata entry's name ("" for the other keys).
	Key   string `json:"key"`
	Field string `json:"field"`
	Value string `json:"value"`
}

// ChainMember is one member of the matched chain and what it would do with
// the request.
type ChainMember struct {
	// Target is the member's virtual_key; Provider its provider.
	Target   string `json:"target"`
	Provider string `json:"provider"`
	// Detail says where an azure, vertex or gemini member sends the
	// request (URL form, region, credential kind); "" for the others.
	Detail string `json:"detail"`
	// ServesModel: the member's models list admits the model.
	ServesModel bool `json:"serves_model"`
	// ServesSurface: the member serves the surface for the model sent,
	// natively or translated (Form is not none).
	ServesSurface bool `json:"serves_surface"`
	// Form is native, translated or none: how the member serves the
	// surface (provider.FormOf, the form the walk takes).
	Form string `json:"form"`
	// CountTokensForm is how the member answers count_tokens on the
	// messages surface: native, or estimate (the gateway's own, no
	// upstream call); "" (left out) on other surfaces.
	CountTokensForm string `json:"count_tokens_form,omitempty"`
	// ModelSent is the model id sent upstream, after the member's
	// model_map.
	ModelSent string `json:"model_sent"`
	// Residency is the member's residency label; "" when it has none.
	Residency string `json:"residency"`
	// ResidencyAllowed is whether the key's residency labels admit the
	// member; null when the key has no residency (or there is no key).
	ResidencyAllowed *bool `json:"residency_allowed"`
	// Candidate: the member serves the model and the surface, so the walk
	// may call it.
	Candidate bool `json:"candidate"`
	// Limits are the member's own limits by name; null when none.
	Limits map[string]float64 `json:"limits"`
	// Price is the member's price for the model, in USD per 1M tokens;
	// null when it has none.
	Price *Price `json:"price"`
}

// Price is a price in USD per 1M tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheRead and CacheWrite are what the cache's tokens are charged:
	// the price's cache_read and cache_write, or Input where it gives none
	// (docs/quotas.md, Cached tokens).
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
}

// Outcome is what a walk over healthy members gives.
type Outcome struct {
	// RoutesTo names the candidates in the order the walk tries them (the
	// first answers; the others only after a provider-side failure); []
	// when the request is refused.
	RoutesTo []string `json:"routes_to"`
	// Error is the gateway's answer when no member is tried; null when
	// the request routes.
	Error *OutcomeError `json:"error"`
	// Text is the outcome line without its "outcome: " prefix.
	Text string `json:"text"`
}

// OutcomeError is an answer the gateway gives without calling a member.
type OutcomeError struct {
	// Status is the HTTP status: 403 or 404.
	Status int `json:"status"`
	// Code is model_not_allowed, model_not_found or unsupported_endpoint.
	Code string `json:"code"`
}

// ResidencyProof is what the load-time residency proof finds for a key with
// residency (docs/residency.md).
type ResidencyProof struct {
	// Labels are the key's residency labels.
	Labels []string `json:"labels"`
	// Reachable is every target some request of the key can reach, in
	// target order.
	Reachable []Reach `json:"reachable"`
	// OK is true when every reachable target carries one of Labels; a
	// config where it is false is refused by validate and at load.
	OK bool `json:"ok"`
}

// Reach is one target a key's requests can reach.
type Reach struct {
	Target    string `json:"target"`
	Residency string `json:"residency"`
	// Via names the rules that reach it: "strategy.conditions[N]" or
	// "fallback".
	Via []string `json:"via"`
	// Outside is true when the target carries none of the key's labels.
	Outside bool `json:"outside"`
}
