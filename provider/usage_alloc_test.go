//go:build !race

package provider

import "testing"

func TestReadUsageAllocsZero(t *testing.T) {
	for _, body := range append([][]byte{
		embeddingsBody(1<<20, false),
		embeddingsBody(1<<20, true),
		[]byte(`{"choices":[{"usage":{"prompt_tokens":9}}],"usage":{"prompt_tokens":8,"completion_tokens":5}}`),
	}, usageAnswers...) { // with details objects, Anthropic's and Bedrock's cache counts
		if n := testing.AllocsPerRun(20, func() {
			if _, ok := ReadUsage(body); !ok {
				t.Fatal("no usage")
			}
		}); n != 0 {
			t.Fatalf("ReadUsage allocates %v per run", n)
		}
	}
}
