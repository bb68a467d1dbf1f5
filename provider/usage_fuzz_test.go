package provider

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzReadUsage: on any body that is valid JSON, a usage ReadUsage reports
// is the body's top-level usage as the reference model reads it with
// encoding/json (the last of duplicate top-level keys, as encoding/json
// takes it).
func FuzzReadUsage(f *testing.F) {
	for _, s := range []string{
		`{"usage":{"prompt_tokens":8,"completion_tokens":5}}`,
		`{"choices":[{"usage":{"prompt_tokens":9}}],"usage":{"prompt_tokens":8,"completion_tokens":5}}`,
		`{"a":"\"usage\":{\"prompt_tokens\":9}}","usage":{"input_tokens":1,"output_tokens":2}}`,
		`{"usage":{"input_tokens":1,"cache_read_input_tokens":4,"output_tokens":2},"x":[1,{"usage":{}}]}`,
		`{"usage":null,"b":{"usage":{"prompt_tokens":3}}}`,
		`{"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens":1}}`,
		`{"usage":{"inputTokens":3,"cacheReadInputTokens":4,"cacheWriteInputTokens":5,"outputTokens":1}}`,
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
		if want, ok := refUsage(top["usage"]); !ok || want != got {
			t.Fatalf("%s: ReadUsage %+v; the reference model reads %+v, %v", body, got, want, ok)
		}
	})
}
