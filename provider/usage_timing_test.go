package provider

import (
	"bytes"
	"testing"
)

// BenchmarkReadUsage reads the usage of a 1 MiB embeddings answer: as
// OpenAI, vLLM and Ollama send it (usage last), with usage first, and with
// none at all (the whole body is searched). b.SetBytes makes the figure a
// throughput over the whole body.
func BenchmarkReadUsage(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
	}{
		{"1MiB-usage-last", embeddingsBody(1<<20, false)},
		{"1MiB-usage-first", embeddingsBody(1<<20, true)},
		{"1MiB-no-usage", embeddingsBody(1<<20, true)[len(`{"object":"list","usage":{"prompt_tokens":8,"total_tokens":8},`):]},
		{"1MiB-quoted-no-usage", bytes.Repeat([]byte(`"usag",`), 1<<20/7)},
		// Every SSE chunk of an OpenAI-compatible stream is looked at.
		{"chunk-without-usage", []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"the quick brown fox"},"finish_reason":null}]}`)},
		{"chunk-usage-null", []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"the quick brown fox"},"finish_reason":null}],"usage":null}`)},
		{"chunk", []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":21,"total_tokens":29}}`)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				ReadUsage(bc.body)
			}
		})
	}
}

// BenchmarkReadUsageBaselineFastjson is the full parse ReadUsage avoids:
// fastjson (a pooled parser, no allocation once warm) over the same 1 MiB
// embeddings answer, then the usage lookup.
func BenchmarkReadUsageBaselineFastjson(b *testing.B) {
	body := embeddingsBody(1<<20, false)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		p := parserPool.Get()
		v, err := p.ParseBytes(body)
		if err != nil || v.GetInt64("usage", "prompt_tokens") != 8 {
			b.Fatal("parse")
		}
		parserPool.Put(p)
	}
}

// usageAnswers are the usage-bearing bodies a request's answer has, one
// of each shape: an OpenAI chat answer (with its details objects), the
// final usage chunk of an OpenAI stream, an Anthropic message and a
// Bedrock Converse answer, as their providers send them.
var usageAnswers = [][]byte{
	[]byte(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1741570283,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"The image shows a wooden boardwalk path running through a lush green field.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_fc9f1d7035"}`),
	[]byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`),
	[]byte(`{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"Hi! My name is Claude."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":310,"cache_read_input_tokens":48210,"cache_creation":{"ephemeral_5m_input_tokens":310,"ephemeral_1h_input_tokens":0},"output_tokens":6,"service_tier":"standard"}}`),
	[]byte(`{"output":{"message":{"role":"assistant","content":[{"text":"Hello"}]}},"stopReason":"end_turn","usage":{"inputTokens":30,"outputTokens":628,"totalTokens":48178,"cacheReadInputTokens":47210,"cacheWriteInputTokens":310},"metrics":{"latencyMs":1275}}`),
}

// BenchmarkUsageAnswers reads the usage of each of usageAnswers with the
// four-part reader (the figure per answer is ns/op ÷ 4).
func BenchmarkUsageAnswers(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, a := range usageAnswers {
			if _, ok := ReadUsage(a); !ok {
				b.Fatal("no usage")
			}
		}
	}
}

// BenchmarkUsageAnswersPreChange is BenchmarkUsageAnswers's twin: the
// reader as it was at commit 9a32d2e (usage_prechange_test.go).
func BenchmarkUsageAnswersPreChange(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, a := range usageAnswers {
			readUsagePreChange(a) // (it did not know Bedrock's names)
		}
	}
}
