package provider

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func TestReadUsage(t *testing.T) {
	full := func(p, c int64) Usage { return Usage{Prompt: p, Completion: c, HasPrompt: true, HasCompletion: true} }
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
		{"details skipped", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":{"cached_tokens":2,"prompt_tokens":99},"completion_tokens":1}}`, full(8, 1)},
		{"usage first", `{"usage":{"prompt_tokens":1,"completion_tokens":2},"data":[` + strings.Repeat(`0.5,`, 1000) + `1]}`, full(1, 2)},
		{"anthropic cache", `{"type":"message","usage":{"input_tokens":3,"cache_creation_input_tokens":10,"cache_read_input_tokens":20,"output_tokens":4}}`, full(33, 4)},
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
		var u map[string]json.RawMessage
		if err := json.Unmarshal(v["usage"], &u); err != nil {
			t.Fatalf("%s: ReadUsage found %+v, parser finds no usage object", body, got)
		}
		want := func(raw json.RawMessage, has bool, n int64) {
			if !has {
				return
			}
			if m, err := strconv.ParseInt(string(raw), 10, 64); err != nil || m != n {
				t.Fatalf("%s: ReadUsage %+v disagrees with %s", body, got, raw)
			}
		}
		want(u["prompt_tokens"], got.HasPrompt, got.Prompt)
		want(u["completion_tokens"], got.HasCompletion, got.Completion)
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
