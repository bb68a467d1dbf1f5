// Package providertest holds what the tests of provider and upstream feed
// the adapters: provider streams as the providers send them, and Bedrock
// event-stream frames, whole or as a bare prelude.
package providertest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// Messages streams as Anthropic sends them.
var (
	MsgStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
	MsgDelta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n"
	MsgPing  = "event: ping\ndata: {\"type\": \"ping\"}\n\n"
	MsgStop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

func AnthropicErrorEvent(typ, msg string) string {
	return "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"" + typ + "\",\"message\":\"" + msg + "\"}}\n\n"
}

// Responses streams as OpenAI sends them.
var (
	RespCreated   = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n"
	RespDelta     = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hello\"}\n\n"
	RespCompleted = "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\"}}\n\n"
)

func RespFailed(code string) string {
	return "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"" + code + "\",\"message\":\"failed: " + code + "\"}}}\n\n"
}

func RespError(typ, code string) string {
	return "event: error\ndata: {\"type\":\"error\",\"sequence_number\":0,\"error\":{\"type\":\"" + typ + "\",\"code\":\"" + code + "\",\"message\":\"bad: " + code + "\",\"param\":null}}\n\n"
}

// Prelude is a Bedrock frame prelude: total and headers lengths and the
// prelude CRC, spoilt when badCRC.
func Prelude(total, headers uint32, badCRC bool) []byte {
	p := binary.BigEndian.AppendUint32(nil, total)
	p = binary.BigEndian.AppendUint32(p, headers)
	crc := crc32.ChecksumIEEE(p)
	if badCRC {
		crc ^= 1
	}
	return binary.BigEndian.AppendUint32(p, crc)
}

// BedrockFrame encodes one ConverseStream event.
func BedrockFrame(t testing.TB, eventType string, payload []byte) []byte {
	t.Helper()
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue("event"))
	m.Headers.Set(":event-type", eventstream.StringValue(eventType))
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	m.Payload = payload
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
