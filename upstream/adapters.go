package upstream

import "github.com/switchyard/switchyard/provider"

// adapters maps each provider of the registry (package provider) to its
// adapter: the one place a provider's protocol is wired in. Read-only.
var adapters = map[string]Adapter{
	provider.OpenAI:    openAIAdapter{},
	provider.Anthropic: anthropicAdapter{},
	provider.Bedrock:   bedrockAdapter{},
	provider.Azure:     azureAdapter{},
	provider.Vertex:    vertexAdapter{},
	provider.Gemini:    geminiAdapter{},
}
