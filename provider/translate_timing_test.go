package provider

import (
	"bufio"
	"encoding/json"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

// Translation cost of the anthropic and bedrock adapters: per request
// (BuildRequest, TranslateResponse) and per stream event (Next). The
// baseline is an encoding/json round trip of the same client body, the
// naive way to rewrite it.
//
//	go test ./upstream -run '^$' -bench 'Translate|StreamEvent|Baseline' -benchtime=200ms

var benchChatBody = []byte(`{"model":"claude-sonnet","messages":[` +
	`{"role":"system","content":"You are a helpful assistant. Answer briefly."},` +
	`{"role":"user","content":"What is the weather in Paris today? Please also tell me about the city."},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_1","content":"18C, sunny, light wind from the west"},` +
	`{"role":"user","content":"Thanks! And tomorrow?"}],` +
	`"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather for a city",` +
	`"parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"]}}}],` +
	`"tool_choice":"auto","max_tokens":512,"temperature":0.2,"user":"u-1"}`)

var benchAnthropicResponse = []byte(`{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
	`"content":[{"type":"text","text":"Tomorrow in Paris expect 20C and sunshine, with a light breeze in the afternoon."},` +
	`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris","day":"tomorrow"}}],` +
	`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":420,"output_tokens":61}}`)

var benchBedrockResponse = []byte(`{"output":{"message":{"role":"assistant","content":[` +
	`{"text":"Tomorrow in Paris expect 20C and sunshine, with a light breeze in the afternoon."},` +
	`{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":{"city":"Paris","day":"tomorrow"}}}]}},` +
	`"stopReason":"tool_use","usage":{"inputTokens":420,"outputTokens":61,"totalTokens":481},"metrics":{"latencyMs":900}}`)

func benchBuild(b *testing.B, a Adapter, ep *Endpoint) {
	c := &Call{Surface: router.SurfaceChat, Body: benchChatBody, Model: []byte("claude-sonnet")}
	model := []byte("anthropic.claude-3-5-sonnet-20240620-v1:0")
	b.ReportAllocs()
	b.SetBytes(int64(len(benchChatBody)))
	b.RunParallel(func(pb *testing.PB) {
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		for pb.Next() {
			req.Reset()
			if err := a.BuildRequest(req, ep, c, model); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkTranslateRequestAnthropic(b *testing.B) {
	benchBuild(b, newAnthropicAdapter(), &Endpoint{BaseURL: "https://api.anthropic.com", APIKey: "k"})
}

func BenchmarkTranslateRequestBedrockBearer(b *testing.B) {
	benchBuild(b, newBedrockAdapter(), &Endpoint{BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com", APIKey: "k"})
}

func BenchmarkTranslateRequestBedrockSigV4(b *testing.B) {
	benchBuild(b, newBedrockAdapter(), &Endpoint{BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com",
		Region: "us-east-1", AWSAccessKeyID: "AKIDEXAMPLE", AWSSecretAccessKey: "secret"})
}

// BenchmarkBaselineEncodingJSONRoundTrip is the naive twin of the request
// translations: decode the client body into maps and encode it again.
func BenchmarkBaselineEncodingJSONRoundTrip(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchChatBody)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var m map[string]any
			if err := json.Unmarshal(benchChatBody, &m); err != nil {
				b.Fatal(err)
			}
			m["model"] = "x"
			if _, err := json.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchResponse(b *testing.B, a Adapter, body []byte) {
	c := &Call{Surface: router.SurfaceChat, Body: benchChatBody, Model: []byte("claude-sonnet")}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.RunParallel(func(pb *testing.PB) {
		var dst []byte
		for pb.Next() {
			var err error
			if dst, err = a.TranslateResponse(dst[:0], body, c); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkTranslateResponseAnthropic(b *testing.B) {
	benchResponse(b, newAnthropicAdapter(), benchAnthropicResponse)
}

func BenchmarkTranslateResponseBedrock(b *testing.B) {
	benchResponse(b, newBedrockAdapter(), benchBedrockResponse)
}

// cycleReader repeats data forever.
type cycleReader struct {
	data []byte
	off  int
}

func (r *cycleReader) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

// benchStreamEvent measures one Next call translating one text delta event.
func benchStreamEvent(b *testing.B, a Adapter, event []byte) {
	c := &Call{Surface: router.SurfaceChat, Stream: true, Body: benchChatBody, Model: []byte("claude-sonnet")}
	dec := a.NewStream(c)
	r := bufio.NewReader(&cycleReader{data: event})
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(event)))
	b.ResetTimer()
	for range b.N {
		var err error
		if dst, err = dec.Next(dst[:0], r); err != nil || len(dst) == 0 {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamEventAnthropic(b *testing.B) {
	benchStreamEvent(b, newAnthropicAdapter(), []byte("event: content_block_delta\n"+
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Tomorrow in Paris expect"}}`+"\n\n"))
}

func BenchmarkStreamEventBedrock(b *testing.B) {
	frame := encodeEvents(b, []json.RawMessage{json.RawMessage(`{"headers":{":message-type":"event",":event-type":"contentBlockDelta",":content-type":"application/json"},` +
		`"payload":{"contentBlockIndex":0,"delta":{"text":"Tomorrow in Paris expect"},"p":"abcdefgh"}}`)})
	benchStreamEvent(b, newBedrockAdapter(), frame)
}
