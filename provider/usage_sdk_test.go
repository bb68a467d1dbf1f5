package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchyard/switchyard/provider/providertest"
	"github.com/switchyard/switchyard/router"
)

// The official SDKs are the oracle of usage (docs/quotas.md, Cached
// tokens): each provider's answers and streams, taken from the SDKs' own
// test fixtures where they have them (anthropic-sdk-go v2.16.0) and
// otherwise written as the API references show them, are decoded by the
// SDK a client would use; the four parts the gateway reads must be the
// SDK's numbers, and the answer the client receives (translated or not)
// must say the same numbers in its own surface's fields.

// From anthropic-sdk-go v2.16.0, opentelemetry_test.go (messageJSON).
const sdkAnthropicMessage = `{
	"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-served",
	"content": [{"type": "text", "text": "hi"}],
	"stop_reason": "end_turn",
	"usage": {
		"input_tokens": 10, "output_tokens": 5,
		"cache_creation_input_tokens": 3, "cache_read_input_tokens": 2,
		"cache_creation": {"ephemeral_5m_input_tokens": 1, "ephemeral_1h_input_tokens": 2},
		"service_tier": "standard"
	}
}`

// From anthropic-sdk-go v2.16.0, opentelemetry_test.go (streamBody): the
// input counts in message_start, the output in message_delta.
const sdkAnthropicStream = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-served","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":2,"cache_creation_input_tokens":3,"cache_creation":{"ephemeral_5m_input_tokens":3,"ephemeral_1h_input_tokens":0},"service_tier":"standard"}}}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
	"event: ping\n" +
	`data: {"type":"ping"}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":0}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7,"output_tokens_details":{"thinking_tokens":4}}}` + "\n\n" +
	"event: message_stop\n" +
	`data: {"type":"message_stop"}` + "\n\n"

// From anthropic-sdk-go v2.16.0, messageutil_test.go
// (messageStartWithUsage, and TestAccumulateMessageDeltaAppliesEveryField's
// message_delta, whose counts are cumulative and replace message_start's).
var sdkAnthropicCumulative = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"stop_details":null,"usage":{"input_tokens":10,"output_tokens":1,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"cache_creation":{"ephemeral_5m_input_tokens":2,"ephemeral_1h_input_tokens":0},"service_tier":"standard"}}}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null,"stop_details":null,"container":{"id":"container_1","expires_at":"2025-01-01T00:00:00Z"}},"usage":{"input_tokens":12,"output_tokens":99,"cache_creation_input_tokens":4,"cache_read_input_tokens":5,"server_tool_use":{"web_search_requests":2,"web_fetch_requests":1},"output_tokens_details":{"thinking_tokens":7}}}` + "\n\n" +
	"event: message_stop\n" +
	`data: {"type":"message_stop"}` + "\n\n"

// A chat completion as OpenAI's API reference shows one, with the cache
// counts of the SDK's CompletionUsagePromptTokensDetails.
const sdkOpenAIChat = `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1741570283,"model":"gpt-4o-2024-08-06",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"The image shows a wooden boardwalk.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024,"cache_write_tokens":64,"audio_tokens":0},` +
	`"completion_tokens_details":{"reasoning_tokens":12,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_fc9f1d7035"}`

// The same completion streamed: chunks, then the usage chunk a client
// asking stream_options.include_usage gets.
var sdkOpenAIChatStream = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n" +
	`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"hi"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n" +
	`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}` + "\n\n" +
	`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":12}}}` + "\n\n" +
	"data: [DONE]\n\n"

// A Responses API answer as its API reference shows one, with the SDK's
// ResponseUsageInputTokensDetails.
const sdkResponse = `{"id":"resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b","object":"response","created_at":1741476542,"status":"completed","error":null,"incomplete_details":null,` +
	`"instructions":null,"max_output_tokens":null,"model":"gpt-4.1-2025-04-14","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant",` +
	`"content":[{"type":"output_text","text":"In a peaceful grove...","annotations":[]}]}],"parallel_tool_calls":true,"previous_response_id":null,"store":true,"temperature":1.0,` +
	`"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled",` +
	`"usage":{"input_tokens":36000,"input_tokens_details":{"cached_tokens":34816,"cache_write_tokens":512},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":36087},"user":null,"metadata":{}}`

// Bedrock Converse's answer and its stream's metadata event, with the
// fields of the API reference's TokenUsage (inputTokens leaves the cache's
// tokens out).
const (
	bedrockConverse = `{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn",` +
		`"usage":{"inputTokens":30,"outputTokens":628,"totalTokens":48178,"cacheReadInputTokens":47210,"cacheWriteInputTokens":310,` +
		`"cacheDetails":[{"ttl":"5m","inputTokens":310}]},"metrics":{"latencyMs":1275}}`
	bedrockMetadata = `{"usage":{"inputTokens":30,"outputTokens":628,"totalTokens":48178,"cacheReadInputTokens":47210,"cacheWriteInputTokens":310},"metrics":{"latencyMs":1275}}`
)

// Oracles: each reads the four parts as its SDK decodes them.

func anthropicOracle(t *testing.T, u anthropic.Usage) Usage {
	t.Helper()
	return Usage{Prompt: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, CacheRead: u.CacheReadInputTokens,
		CacheWrite: u.CacheCreationInputTokens, Completion: u.OutputTokens, HasPrompt: true, HasCompletion: true}
}

func chatOracle(u openai.CompletionUsage) Usage {
	return Usage{Prompt: u.PromptTokens, CacheRead: u.PromptTokensDetails.CachedTokens, CacheWrite: u.PromptTokensDetails.CacheWriteTokens,
		Completion: u.CompletionTokens, HasPrompt: true, HasCompletion: true}
}

func responsesOracle(u responses.ResponseUsage) Usage {
	return Usage{Prompt: u.InputTokens, CacheRead: u.InputTokensDetails.CachedTokens, CacheWrite: u.InputTokensDetails.CacheWriteTokens,
		Completion: u.OutputTokens, HasPrompt: true, HasCompletion: true}
}

// The client's reading of what the gateway sent it, per surface.

func clientChat(t *testing.T, body []byte) Usage {
	t.Helper()
	var c openai.ChatCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("the OpenAI SDK cannot read %s: %v", body, err)
	}
	return chatOracle(c.Usage)
}

func clientMessage(t *testing.T, body []byte) Usage {
	t.Helper()
	var m anthropic.Message
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("the Anthropic SDK cannot read %s: %v", body, err)
	}
	return anthropicOracle(t, m.Usage)
}

func clientResponse(t *testing.T, body []byte) Usage {
	t.Helper()
	var r responses.Response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("the OpenAI SDK cannot read %s: %v", body, err)
	}
	return responsesOracle(r.Usage)
}

// sseData returns the data of each SSE event in a stream.
func sseData(stream []byte) [][]byte {
	var out [][]byte
	for _, ev := range bytes.Split(stream, []byte("\n\n")) {
		for _, ln := range bytes.Split(ev, []byte("\n")) {
			if d, ok := bytes.CutPrefix(ln, []byte("data: ")); ok {
				out = append(out, d)
			}
		}
	}
	return out
}

// clientChatStream is the usage chunk of a chat stream, as the OpenAI SDK
// reads it.
func clientChatStream(t *testing.T, stream []byte) Usage {
	t.Helper()
	for _, d := range sseData(stream) {
		if string(d) == "[DONE]" || !bytes.Contains(d, []byte(`"usage":{`)) {
			continue
		}
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal(d, &c); err != nil {
			t.Fatalf("the OpenAI SDK cannot read %s: %v", d, err)
		}
		return chatOracle(c.Usage)
	}
	t.Fatalf("no usage chunk in %s", stream)
	return Usage{}
}

// clientMessageStream accumulates a Messages stream as the Anthropic SDK
// does.
func clientMessageStream(t *testing.T, stream []byte) Usage {
	t.Helper()
	var m anthropic.Message
	for _, d := range sseData(stream) {
		var ev anthropic.MessageStreamEventUnion
		if err := ev.UnmarshalJSON(d); err != nil {
			t.Fatalf("the Anthropic SDK cannot read %s: %v", d, err)
		}
		if err := m.Accumulate(ev); err != nil {
			t.Fatalf("Accumulate(%s): %v", d, err)
		}
	}
	return anthropicOracle(t, m.Usage)
}

// clientResponseStream is the usage of a Responses stream's
// response.completed, as the OpenAI SDK reads it.
func clientResponseStream(t *testing.T, stream []byte) Usage {
	t.Helper()
	for _, d := range sseData(stream) {
		var ev responses.ResponseStreamEventUnion
		if err := json.Unmarshal(d, &ev); err != nil {
			t.Fatalf("the OpenAI SDK cannot read %s: %v", d, err)
		}
		if ev.Type == "response.completed" {
			return responsesOracle(ev.AsResponseCompleted().Response.Usage)
		}
	}
	t.Fatalf("no response.completed in %s", stream)
	return Usage{}
}

// decodeStream runs a whole upstream stream through a's decoder for a
// call on surface s (a chat client asking for the usage chunk) and
// returns what the client receives and the usage the decoder reports.
func decodeStream(t *testing.T, a Adapter, s router.Surface, upstream []byte) ([]byte, Usage) {
	t.Helper()
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
	dec := a.NewStream(&Call{Surface: s, Stream: true, Model: []byte("m"), Body: []byte(body)})
	r := bufio.NewReader(bytes.NewReader(upstream))
	var out []byte
	for {
		var err error
		out, err = dec.Next(out, r)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("decoding: %v (after %s)", err, out)
		}
	}
	ur, ok := dec.(UsageReporter)
	if !ok {
		t.Fatalf("%T reports no usage", dec)
	}
	return out, ur.Usage()
}

// TestUsageMatchesSDKs: the table of every provider's answers and streams,
// native and translated.
func TestUsageMatchesSDKs(t *testing.T) {
	var msg anthropic.Message
	if err := json.Unmarshal([]byte(sdkAnthropicMessage), &msg); err != nil {
		t.Fatal(err)
	}
	var cc openai.ChatCompletion
	if err := json.Unmarshal([]byte(sdkOpenAIChat), &cc); err != nil {
		t.Fatal(err)
	}
	var resp responses.Response
	if err := json.Unmarshal([]byte(sdkResponse), &resp); err != nil {
		t.Fatal(err)
	}
	bedrock := Usage{Prompt: 30 + 47210 + 310, CacheRead: 47210, CacheWrite: 310, Completion: 628, HasPrompt: true, HasCompletion: true}
	for _, tc := range []struct {
		name    string
		a       Adapter
		surface router.Surface
		wire    string
		want    Usage
		client  func(*testing.T, []byte) Usage
	}{
		{"anthropic messages (native)", messagesAdapter{}, router.SurfaceMessages, sdkAnthropicMessage, anthropicOracle(t, msg.Usage), clientMessage},
		{"anthropic on chat (translated)", anthropicAdapter{}, router.SurfaceChat, sdkAnthropicMessage, anthropicOracle(t, msg.Usage), clientChat},
		{"openai chat (native)", OpenAIAdapter{}, router.SurfaceChat, sdkOpenAIChat, chatOracle(cc.Usage), clientChat},
		{"openai responses (native)", OpenAIAdapter{}, router.SurfaceResponses, sdkResponse, responsesOracle(resp.Usage), clientResponse},
		{"bedrock converse on chat (translated)", bedrockAdapter{}, router.SurfaceChat, bedrockConverse, bedrock, clientChat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := AnswerUsage(tc.a, []byte(tc.wire)); !ok || got != tc.want {
				t.Fatalf("read %+v %v; the SDK reads %+v", got, ok, tc.want)
			}
			ad, _ := Pick(tc.a, &Endpoint{}, tc.surface, false, []byte("m"))
			out, err := ad.TranslateResponse(nil, []byte(tc.wire),
				&Call{Surface: tc.surface, Model: []byte("m"), Body: []byte(`{"model":"m"}`)})
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.client(t, out); got != tc.want {
				t.Fatalf("the client's SDK reads %+v from %s; want %+v", got, out, tc.want)
			}
		})
	}

	var acc anthropic.Message
	for _, d := range sseData([]byte(sdkAnthropicStream)) {
		var ev anthropic.MessageStreamEventUnion
		_ = ev.UnmarshalJSON(d)
		_ = acc.Accumulate(ev)
	}
	var cum anthropic.Message
	for _, d := range sseData([]byte(sdkAnthropicCumulative)) {
		var ev anthropic.MessageStreamEventUnion
		_ = ev.UnmarshalJSON(d)
		_ = cum.Accumulate(ev)
	}
	var chunk openai.ChatCompletionChunk
	for _, d := range sseData([]byte(sdkOpenAIChatStream)) {
		if bytes.Contains(d, []byte(`"usage":{`)) {
			_ = json.Unmarshal(d, &chunk)
		}
	}
	respStream := "event: response.created\ndata: " + `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}` + "\n\n" +
		"event: response.completed\ndata: " + `{"type":"response.completed","sequence_number":1,"response":` + strings.Replace(sdkResponse, "\n", "", -1) + "}\n\n"
	frames := append(append(append(providertest.BedrockFrame(t, "messageStart", []byte(`{"role":"assistant"}`)),
		providertest.BedrockFrame(t, "contentBlockDelta", []byte(`{"contentBlockIndex":0,"delta":{"text":"hi"}}`))...),
		providertest.BedrockFrame(t, "messageStop", []byte(`{"stopReason":"end_turn"}`))...),
		providertest.BedrockFrame(t, "metadata", []byte(bedrockMetadata))...)
	for _, tc := range []struct {
		name    string
		a       Adapter
		surface router.Surface
		wire    []byte
		want    Usage
		client  func(*testing.T, []byte) Usage
	}{
		{"anthropic messages stream (native)", messagesAdapter{}, router.SurfaceMessages, []byte(sdkAnthropicStream), anthropicOracle(t, acc.Usage), clientMessageStream},
		{"anthropic cumulative message_delta (native)", messagesAdapter{}, router.SurfaceMessages, []byte(sdkAnthropicCumulative), anthropicOracle(t, cum.Usage), clientMessageStream},
		{"anthropic stream on chat (translated)", anthropicAdapter{}, router.SurfaceChat, []byte(sdkAnthropicStream), anthropicOracle(t, acc.Usage), clientChatStream},
		{"anthropic cumulative on chat (translated)", anthropicAdapter{}, router.SurfaceChat, []byte(sdkAnthropicCumulative), anthropicOracle(t, cum.Usage), clientChatStream},
		{"openai chat stream (native)", OpenAIAdapter{}, router.SurfaceChat, []byte(sdkOpenAIChatStream), chatOracle(chunk.Usage), clientChatStream},
		{"openai responses stream (native)", OpenAIAdapter{}, router.SurfaceResponses, []byte(respStream), responsesOracle(resp.Usage), clientResponseStream},
		{"bedrock converse stream on chat (translated)", bedrockAdapter{}, router.SurfaceChat, frames, bedrock, clientChatStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ad, _ := Pick(tc.a, &Endpoint{}, tc.surface, false, []byte("m"))
			out, got := decodeStream(t, ad, tc.surface, tc.wire)
			if got != tc.want {
				t.Fatalf("read %+v; the SDK reads %+v", got, tc.want)
			}
			if got := tc.client(t, out); got != tc.want {
				t.Fatalf("the client's SDK reads %+v from %s; want %+v", got, out, tc.want)
			}
		})
	}
}
