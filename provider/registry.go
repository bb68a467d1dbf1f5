// Package provider holds what Switchyard knows of each provider it speaks:
// the one table of providers (their names, the surfaces each serves, their
// default base URL and environment variables, the config keys that belong
// to each, and the adapter that speaks its protocol), and the adapters
// themselves: request building, response and stream translation, usage
// readers, error classification and envelopes, and OAuth token sources.
// Config validation, routing's surface sets and package upstream all read
// the table, so adding a provider is one row here plus its adapter.
// Package upstream owns the transport, connection pool, chain walk and
// resilience, and imports this package; this package never imports it.
package provider

import (
	"strings"

	"github.com/switchyard/switchyard/router"
)

// Provider names, as written in a target's provider key.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
	Bedrock   = "bedrock"
	Azure     = "azure"
	Vertex    = "vertex"
	Gemini    = "gemini"
)

// Info describes one provider. Immutable.
type Info struct {
	// Name is the provider value in a target.
	Name string
	// Surfaces are the surfaces the provider can serve, natively or
	// translated; a target may serve fewer (see Target in config: an azure
	// target on classic deployment URLs serves responses only where a
	// translator for it exists).
	Surfaces router.SurfaceSet
	// DefaultBaseURL is the public endpoint; "" when it depends on the
	// target (bedrock and vertex: the region; azure: the resource).
	DefaultBaseURL string
	// EnvBaseURL and EnvAPIKey name the environment variables that supply
	// base_url and api_key when the target leaves them out ("" = none).
	EnvBaseURL, EnvAPIKey string
	// Keys are the provider-specific target keys this provider accepts;
	// every other provider-specific key (see SpecificKeys) is refused.
	Keys []string
	// Adapter speaks the provider's protocol.
	Adapter Adapter
	// CacheWrites: the provider's answers count prompt-cache writes apart,
	// billed at their own price; a price for it without cache_write is a
	// validate warning (docs/quotas.md, Cached tokens).
	CacheWrites bool
	// CountsCacheReads: the provider's own token rate limits count cache
	// reads, the default of a target's limits.count_cache_reads.
	CountsCacheReads bool
}

// The surfaces each provider serves: its native ones, plus every client
// API served over its chat adapter (TranslatedSurfaces; see Pick for which
// is which, model by model).
var (
	chatAndTranslated = router.SurfaceSet(1)<<router.SurfaceChat | TranslatedSurfaces()
	allSurfacesOpenAI = router.AllSurfaces&^(1<<router.SurfaceMessages) | TranslatedSurfaces()
)

// table lists every provider, in the order problems name them.
var table = [...]Info{
	{Name: OpenAI, Adapter: OpenAIAdapter{}, Surfaces: allSurfacesOpenAI, DefaultBaseURL: "https://api.openai.com/v1",
		EnvBaseURL: "OPENAI_BASE_URL", EnvAPIKey: "OPENAI_API_KEY", Keys: []string{"api_key"}, CountsCacheReads: true},
	{Name: Anthropic, Adapter: anthropicAdapter{}, Surfaces: chatAndTranslated | 1<<router.SurfaceMessages, DefaultBaseURL: "https://api.anthropic.com",
		EnvBaseURL: "ANTHROPIC_BASE_URL", EnvAPIKey: "ANTHROPIC_API_KEY", Keys: []string{"api_key"}, CacheWrites: true},
	{Name: Bedrock, Adapter: bedrockAdapter{}, Surfaces: chatAndTranslated | 1<<router.SurfaceMessages,
		EnvBaseURL: "BEDROCK_BASE_URL", EnvAPIKey: "BEDROCK_API_KEY",
		Keys:        []string{"api_key", "region", "aws_access_key_id", "aws_secret_access_key", "aws_session_token", "anthropic_betas"},
		CacheWrites: true},
	{Name: Azure, Adapter: azureAdapter{}, Surfaces: allSurfacesOpenAI,
		EnvBaseURL: "AZURE_OPENAI_BASE_URL", EnvAPIKey: "AZURE_OPENAI_API_KEY",
		Keys: []string{"api_key", "azure_api_version", "azure_deployment_type", "azure_tenant_id",
			"azure_client_id", "azure_client_secret", "azure_authority"},
		CountsCacheReads: true},
	{Name: Vertex, Adapter: vertexAdapter{}, Surfaces: chatAndTranslated | 1<<router.SurfaceMessages,
		EnvBaseURL: "VERTEX_BASE_URL",
		Keys:       []string{"project", "region", "credentials_file", "credentials_json", "anthropic_betas"}, CacheWrites: true},
	{Name: Gemini, Adapter: geminiAdapter{}, Surfaces: chatAndTranslated | 1<<router.SurfaceEmbeddings,
		DefaultBaseURL: "https://generativelanguage.googleapis.com/v1beta/openai",
		EnvBaseURL:     "GEMINI_BASE_URL", EnvAPIKey: "GEMINI_API_KEY", Keys: []string{"api_key"}, CountsCacheReads: true},
}

// The surfaces of each provider, from the table: what the adapters'
// Surfaces report, so a provider's surfaces are written once.
var (
	openAISurfaces    = Lookup(OpenAI).Surfaces
	anthropicSurfaces = Lookup(Anthropic).Surfaces
	bedrockSurfaces   = Lookup(Bedrock).Surfaces
	azureSurfaces     = Lookup(Azure).Surfaces
	vertexSurfaces    = Lookup(Vertex).Surfaces
	geminiSurfaces    = Lookup(Gemini).Surfaces
)

// SpecificKeys are the target keys that only some providers accept, in
// the order they are checked.
var SpecificKeys = []string{"api_key", "region", "aws_access_key_id", "aws_secret_access_key", "aws_session_token",
	"azure_api_version", "azure_deployment_type", "azure_tenant_id", "azure_client_id", "azure_client_secret",
	"azure_authority", "project", "credentials_file", "credentials_json", "anthropic_betas"}

// Lookup returns the provider named name, or nil.
func Lookup(name string) *Info {
	for i := range table {
		if table[i].Name == name {
			return &table[i]
		}
	}
	return nil
}

// All returns every provider, in table order. The caller must not modify it.
func All() []Info { return table[:] }

// Names lists the provider names for a problem message: "a, b or c".
func Names() string {
	var b strings.Builder
	for i := range table {
		switch {
		case i == len(table)-1:
			b.WriteString(" or ")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(table[i].Name)
	}
	return b.String()
}

// Accepts reports whether provider p accepts the provider-specific key.
func (p *Info) Accepts(key string) bool {
	for _, k := range p.Keys {
		if k == key {
			return true
		}
	}
	return false
}

// Accepting lists the providers that accept key, for a problem message:
// "provider bedrock" or "providers bedrock and vertex".
func Accepting(key string) string {
	var names []string
	for i := range table {
		if table[i].Accepts(key) {
			names = append(names, table[i].Name)
		}
	}
	if len(names) == 1 {
		return "provider " + names[0]
	}
	return "providers " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
