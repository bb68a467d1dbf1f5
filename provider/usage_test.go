package provider

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestReadUsage(t *testing.T) {
	full := func(p, c int64) Usage { return Usage{Prompt: p, Completion: c, HasPrompt: true, HasCompletion: true} }
	cached := func(u Usage, read, write int64) Usage { u.CacheRead, u.CacheWrite = read, write; return u }
	none := Usage{}
	for _, tc := range []struct {
		name string
		body string
		want Usage
	}{
		{"chat", `{"id":"x","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":8,"completion_tokens":5,"total_tokens":13}}`, full(8, 5)},
		{"spaces", " {\n \"usage\" : { \"prompt_tokens\" : 8 ,\n\"completion_tokens\":5 } \n} \n", full(8, 5)},
		{"embeddings", `{"object":"list","data":[{"embedding":[0.1,0.2]}],"model":"m","usage":{"prompt_tokens":8,"total_tokens":8}}`,
			Usage{Prompt: 8, HasPrompt: true}},
		{"responses naming", `{"id":"r","usage":{"input_tokens":3,"output_tokens":4,"output_tokens_details":{"reasoning_tokens":1}},"user":null}`, full(3, 4)},
		{"chat cached", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":{"cached_tokens":2,"prompt_tokens":99},"completion_tokens":1}}`,
			cached(full(8, 1), 2, 0)},
		{"chat details null", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":null,"completion_tokens":1}}`, full(8, 1)},
		{"chat cached null", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":{"cached_tokens":null,"audio_tokens":0},"completion_tokens":1}}`, full(8, 1)},
		{"chat cached over prompt", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":{"cached_tokens":9},"completion_tokens":1}}`, none},
		{"chat details twice", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":{"cached_tokens":2},"input_tokens_details":{"cached_tokens":2}}}`, none},
		{"chat cache write", `{"usage":{"prompt_tokens":100,"prompt_tokens_details":{"cached_tokens":60,"cache_write_tokens":30},"completion_tokens":1}}`,
			cached(full(100, 1), 60, 30)},
		{"chat cache write over prompt", `{"usage":{"prompt_tokens":100,"prompt_tokens_details":{"cached_tokens":60,"cache_write_tokens":41}}}`, none},
		{"responses cache write", `{"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":60,"cache_write_tokens":30,"cache_write_tokens_details":{"x":1}},"output_tokens":1}}`,
			cached(full(100, 1), 60, 30)},
		{"chat write names disagree", `{"usage":{"prompt_tokens":100,"prompt_tokens_details":{"cache_write_tokens":30},"cache_creation_input_tokens":31}}`, none},
		{"chat cached twice", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":{"cached_tokens":2,"cached_tokens":3}}}`, none},
		{"chat details not an object", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":2,"completion_tokens":1}}`, none},
		{"chat cached float", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":{"cached_tokens":2.0}}}`, none},
		{"litellm both names", `{"usage":{"prompt_tokens":38,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":20},"cache_read_input_tokens":20,"cache_creation_input_tokens":10}}`,
			cached(full(38, 4), 20, 10)},
		{"litellm names disagree", `{"usage":{"prompt_tokens":38,"prompt_tokens_details":{"cached_tokens":20},"cache_read_input_tokens":21}}`, none},
		{"prompt_tokens with anthropic cache over it", `{"usage":{"prompt_tokens":8,"cache_creation_input_tokens":9}}`, none},
		{"responses cached", `{"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":80},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":105}}`,
			cached(full(100, 5), 80, 0)},
		{"responses cached over input", `{"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":80},"output_tokens":5}}`, none},
		{"input_tokens means two things", `{"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":80},"cache_read_input_tokens":80}}`, none},
		{"bedrock converse", `{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn","usage":{"inputTokens":30,"outputTokens":5,"totalTokens":142,"cacheReadInputTokens":100,"cacheWriteInputTokens":7},"metrics":{"latencyMs":9}}`,
			cached(full(137, 5), 100, 7)},
		{"bedrock with openai details", `{"usage":{"inputTokens":30,"input_tokens_details":{"cached_tokens":1}}}`, none},
		{"bedrock and anthropic input", `{"usage":{"inputTokens":30,"input_tokens":30}}`, none},
		{"anthropic iterations nested", `{"usage":{"input_tokens":10,"cache_read_input_tokens":2,"cache_creation_input_tokens":3,"output_tokens":5,"iterations":[{"type":"message","input_tokens":99,"cache_read_input_tokens":99,"output_tokens":99}],"cache_creation":{"ephemeral_5m_input_tokens":3}}}`,
			cached(full(15, 5), 2, 3)},
		{"usage first", `{"usage":{"prompt_tokens":1,"completion_tokens":2},"data":[` + strings.Repeat(`0.5,`, 1000) + `1]}`, full(1, 2)},
		{"anthropic cache", `{"type":"message","usage":{"input_tokens":3,"cache_creation_input_tokens":10,"cache_read_input_tokens":20,"output_tokens":4}}`,
			cached(full(33, 4), 20, 10)},
		{"anthropic cache null", `{"usage":{"input_tokens":3,"cache_creation_input_tokens":null,"cache_read_input_tokens":20,"output_tokens":4}}`,
			cached(full(23, 4), 20, 0)},
		{"cache without prompt", `{"usage":{"cache_read_input_tokens":20,"output_tokens":4}}`, Usage{Completion: 4, HasCompletion: true}},
		{"duplicate cache", `{"usage":{"input_tokens":3,"cache_read_input_tokens":20,"cache_read_input_tokens":20}}`, none},
		{"zero", `{"usage":{"prompt_tokens":0,"completion_tokens":0}}`, full(0, 0)},
		{"null count", `{"usage":{"prompt_tokens":8,"completion_tokens":null}}`, Usage{Prompt: 8, HasPrompt: true}},

		{"no usage", `{"id":"x","choices":[]}`, none},
		{"null usage", `{"id":"x","usage":null}`, none},
		{"usage not an object", `{"usage":[1,2]}`, none},
		{"empty usage", `{"usage":{}}`, none},
		{"only total", `{"usage":{"total_tokens":9}}`, none},
		{"in content", `{"choices":[{"message":{"content":"\"usage\":{\"prompt_tokens\":99,\"completion_tokens\":99}}"}}]}`, none},
		{"in content escaped backslash", `{"choices":[{"text":"a\\\"usage\":{\"prompt_tokens\":99}}"}]}`, none},
		{"string value", `{"object":"usage","x":1}`, none},
		{"key ends with usage", `{"x \"usage":{"prompt_tokens":99,"completion_tokens":99}}`, none},
		{"nested only", `{"choices":[{"usage":{"prompt_tokens":99,"completion_tokens":99}}]}`, none},
		{"nested object only", `{"meta":{"usage":{"prompt_tokens":99,"completion_tokens":99}}}`, none},
		{"nested after real", `{"usage":{"prompt_tokens":8,"completion_tokens":5},"choices":[{"usage":{"prompt_tokens":99,"completion_tokens":99}}]}`, full(8, 5)},
		{"nested before real", `{"choices":[{"usage":{"prompt_tokens":99,"completion_tokens":99}}],"usage":{"prompt_tokens":8,"completion_tokens":5}}`, full(8, 5)},
		{"string value after real", `{"usage":{"prompt_tokens":8,"completion_tokens":5},"object":"usage"}`, full(8, 5)},
		{"content with usage after real", `{"usage":{"prompt_tokens":8,"completion_tokens":5},"c":"\"usage\":{\"prompt_tokens\":99}}"}`, full(8, 5)},
		{"duplicate count", `{"usage":{"prompt_tokens":8,"prompt_tokens":9,"completion_tokens":5}}`, none},
		{"both spellings", `{"usage":{"prompt_tokens":8,"input_tokens":9}}`, none},
		{"float count", `{"usage":{"prompt_tokens":8.5,"completion_tokens":5}}`, none},
		{"exponent count", `{"usage":{"prompt_tokens":8e3,"completion_tokens":5}}`, none},
		{"negative count", `{"usage":{"prompt_tokens":-8,"completion_tokens":5}}`, none},
		{"string count", `{"usage":{"prompt_tokens":"8","completion_tokens":5}}`, none},
		{"leading zero", `{"usage":{"prompt_tokens":08,"completion_tokens":5}}`, none},
		{"huge count", `{"usage":{"prompt_tokens":12345678901234567890,"completion_tokens":5}}`, none},
		{"truncated", `{"usage":{"prompt_tokens":8,"completion_tokens":5`, none},
		// (Near the end the suffix is the proof, and it must end the body.)
		{"trailing garbage", `{"a":"` + strings.Repeat("x", 100) + `","usage":{"prompt_tokens":8,"completion_tokens":5}}}`, none},
		{"trailing bytes", `{"a":"` + strings.Repeat("x", 100) + `","usage":{"prompt_tokens":8,"completion_tokens":5}} x`, none},
		{"array root", `[{"usage":{"prompt_tokens":8,"completion_tokens":5}}]`, none},
		{"not json", `usage "usage" usage`, none},
		{"empty", ``, none},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ReadUsage([]byte(tc.body))
			if got != tc.want || ok != tc.want.Known() {
				t.Fatalf("ReadUsage(%s) = %+v, %v; want %+v", tc.body, got, ok, tc.want)
			}
		})
	}
}

// Whatever the body, ReadUsage never reports numbers that a real JSON
// parser would not find in the body's top-level usage object.
func TestReadUsageAgreesWithParser(t *testing.T) {
	pieces := []string{`"usage"`, `:`, `{`, `}`, `[`, `]`, `,`, `"prompt_tokens"`, `"completion_tokens"`,
		`"cache_read_input_tokens"`, `"prompt_tokens_details":{"cached_tokens":1}`,
		`1`, `22`, `"x"`, `\"`, `\\`, ` `, `null`, `"usage":{"prompt_tokens":3}`, `"a":`}
	seed := uint64(1)
	next := func() uint64 { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return seed }
	checked := 0
	for n := 0; n < 200000; n++ {
		var b bytes.Buffer
		b.WriteString(`{`)
		for k := int(next() % 12); k > 0; k-- {
			b.WriteString(pieces[next()%uint64(len(pieces))])
		}
		b.WriteString(`}`)
		body := b.Bytes()
		got, ok := ReadUsage(body)
		if !ok {
			continue
		}
		var v map[string]json.RawMessage
		if json.Unmarshal(body, &v) != nil {
			// Invalid JSON: ReadUsage may say anything for the suffix
			// side, but never on a body that starts with a valid prefix
			// proof... only valid bodies are judged here.
			continue
		}
		checked++
		if want, ok := refUsage(v["usage"]); !ok || want != got {
			t.Fatalf("%s: ReadUsage %+v; the reference model reads %+v, %v", body, got, want, ok)
		}
	}
	if checked == 0 {
		t.Fatal("no valid body with usage was generated")
	}
	t.Logf("%d bodies checked against encoding/json", checked)
}

// embeddingsBody is an OpenAI embeddings answer of about size bytes.
func embeddingsBody(size int, usageFirst bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"object":"list",`)
	if usageFirst {
		b.WriteString(`"usage":{"prompt_tokens":8,"total_tokens":8},`)
	}
	b.WriteString(`"data":[{"object":"embedding","index":0,"embedding":[`)
	for b.Len() < size-100 {
		b.WriteString(`-0.0123456789,`)
	}
	b.WriteString(`0.1]}],"model":"text-embedding-3-small"`)
	if !usageFirst {
		b.WriteString(`,"usage":{"prompt_tokens":8,"total_tokens":8}`)
	}
	b.WriteString(`}`)
	return b.Bytes()
}

func TestReadUsageLargeBodies(t *testing.T) {
	for _, first := range []bool{false, true} {
		u, ok := ReadUsage(embeddingsBody(1<<20, first))
		if !ok || u != (Usage{Prompt: 8, HasPrompt: true}) {
			t.Fatalf("usageFirst=%v: %+v %v", first, u, ok)
		}
	}
}

func TestLastIndexMatchesBytes(t *testing.T) {
	sep := []byte(`"usage"`)
	for _, n := range []int{0, 3, 7, 100, lastIndexChunk - 1, lastIndexChunk + 3, lastIndexTail - 5, lastIndexTail + 6,
		lastIndexWindow - 3, lastIndexWindow, lastIndexWindow + lastIndexTail + 2, 3*lastIndexWindow + 5} {
		for _, at := range []int{-1, 0, 1, lastIndexWindow - 4, lastIndexWindow - 7, lastIndexWindow - 1, n - 7, n / 2,
			n - lastIndexChunk - 3, n - lastIndexChunk - 7, n - lastIndexTail - 3, n - lastIndexTail - 7, n - lastIndexTail - lastIndexWindow - 2} {
			b := bytes.Repeat([]byte("x"), n)
			if at >= 0 && at+len(sep) <= n {
				copy(b[at:], sep)
				if at > 20 {
					copy(b[3:], sep) // an earlier one must not win
				}
			}
			if got, want := lastIndex(b, sep), bytes.LastIndex(b, sep); got != want {
				t.Fatalf("n=%d at=%d: lastIndex %d, bytes.LastIndex %d", n, at, got, want)
			}
		}
	}
}
