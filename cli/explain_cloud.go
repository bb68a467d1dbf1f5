package cli

import (
	"strings"

	"github.com/switchyard/switchyard/config"
)

// providerDetail describes where an azure, vertex or gemini target sends
// requests, for explain: " (…)", or "" for the other providers.
func providerDetail(t *config.Target, upstreamModel string) string {
	var parts []string
	switch t.Provider {
	case config.ProviderAzure:
		if t.AzureAPIVersion != "" {
			parts = append(parts, "classic deployment URL, deployment "+upstreamModel+", api-version "+t.AzureAPIVersion)
		} else {
			parts = append(parts, "v1 API")
		}
		if t.AzureDeploymentType != "" {
			parts = append(parts, "deployment type "+t.AzureDeploymentType)
		}
		if t.AzureClientID != "" {
			parts = append(parts, "Entra ID token")
		} else {
			parts = append(parts, "api-key")
		}
	case config.ProviderVertex:
		parts = append(parts, "project "+t.Project, "region "+t.Region)
		if strings.HasPrefix(upstreamModel, "claude-") {
			parts = append(parts, "Claude through rawPredict")
		} else {
			parts = append(parts, "OpenAI-compatible endpoint")
		}
	case config.ProviderGemini:
		parts = append(parts, "Gemini API OpenAI-compatible endpoint, global")
	default:
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
