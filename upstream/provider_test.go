package upstream

import "github.com/switchyard/switchyard/provider"

// The provider package's names the walk's tests build on: the OpenAI
// adapter and SSE decoder their fault-injecting adapters embed, and the
// limits and versions they assert.
type (
	openAIAdapter = provider.OpenAIAdapter
	sseDecoder    = provider.SSEDecoder
)

const (
	maxSSEEvent      = provider.MaxSSEEvent
	anthropicVersion = provider.AnthropicVersion
)

// floodSize is how much a hostile upstream offers in these tests: eight
// times maxSSEEvent, produced lazily (never held in memory by the test).
const floodSize = 64 << 20

const (
	anthStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":3}}}\n\n"
	anthDelta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"
)
