package provider

// The upstream streams and request bodies these tests feed the adapters,
// as the providers send them (package upstream's walk tests have the same).

const chatBody = `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`

// Messages streams as Anthropic sends them.
var (
	msgStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
	msgDelta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n"
	msgPing  = "event: ping\ndata: {\"type\": \"ping\"}\n\n"
	msgStop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

func anthropicErrorEvent(typ, msg string) string {
	return "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"" + typ + "\",\"message\":\"" + msg + "\"}}\n\n"
}

// Responses streams as OpenAI sends them.
var (
	respCreated   = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n"
	respDelta     = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hello\"}\n\n"
	respCompleted = "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\"}}\n\n"
)

func respFailed(code string) string {
	return "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"" + code + "\",\"message\":\"failed: " + code + "\"}}}\n\n"
}

func respError(typ, code string) string {
	return "event: error\ndata: {\"type\":\"error\",\"sequence_number\":0,\"error\":{\"type\":\"" + typ + "\",\"code\":\"" + code + "\",\"message\":\"bad: " + code + "\",\"param\":null}}\n\n"
}
