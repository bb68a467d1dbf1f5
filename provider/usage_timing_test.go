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
