package provider

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
)

// FuzzReadUsage: on any body that is valid JSON, a usage ReadUsage reports
// is the body's top-level usage as encoding/json reads it (the last of
// duplicate top-level keys, as encoding/json takes it).
func FuzzReadUsage(f *testing.F) {
	for _, s := range []string{
		`{"usage":{"prompt_tokens":8,"completion_tokens":5}}`,
		`{"choices":[{"usage":{"prompt_tokens":9}}],"usage":{"prompt_tokens":8,"completion_tokens":5}}`,
		`{"a":"\"usage\":{\"prompt_tokens\":9}}","usage":{"input_tokens":1,"output_tokens":2}}`,
		`{"usage":{"input_tokens":1,"cache_read_input_tokens":4,"output_tokens":2},"x":[1,{"usage":{}}]}`,
		`{"usage":null,"b":{"usage":{"prompt_tokens":3}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := ReadUsage(body)
		if !ok {
			return
		}
		if bytes.Contains(body, []byte(`\u`)) {
			// encoding/json reads "usag\u0065" as "usage"; ReadUsage knows
			// the literal key only (no provider escapes its keys).
			return
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(body, &top) != nil {
			return // not JSON: nothing to compare with
		}
		var u map[string]json.RawMessage
		if err := json.Unmarshal(top["usage"], &u); err != nil {
			t.Fatalf("%s: ReadUsage %+v, encoding/json finds no usage object", body, got)
		}
		num := func(k string) int64 {
			if raw, has := u[k]; has && string(raw) != "null" {
				n, err := strconv.ParseInt(string(raw), 10, 64)
				if err != nil {
					t.Fatalf("%s: %s is %s", body, k, raw)
				}
				return n
			}
			return 0
		}
		if got.HasPrompt {
			want := num("prompt_tokens") + num("input_tokens") + num("cache_creation_input_tokens") + num("cache_read_input_tokens")
			if got.Prompt != want {
				t.Fatalf("%s: prompt %d, encoding/json %d", body, got.Prompt, want)
			}
		}
		if got.HasCompletion {
			if want := num("completion_tokens") + num("output_tokens"); got.Completion != want {
				t.Fatalf("%s: completion %d, encoding/json %d", body, got.Completion, want)
			}
		}
	})
}
