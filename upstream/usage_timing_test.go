package upstream

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
