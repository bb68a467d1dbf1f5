package provider

import (
	"testing"

	"github.com/valyala/fastjson"
)

func TestFastjsonUsageRefusesDoubt(t *testing.T) {
	for _, body := range []string{
		`{"prompt_tokens":1,"input_tokens":2}`, `{"input_tokens":1.5}`, `{"input_tokens":-1}`,
		`{"input_tokens":"1"}`, `{"input_tokens":1,"cache_read_input_tokens":"x"}`, `[]`,
		`{"input_tokens":-0}`, `{"input_tokens":1e3}`, `{"inputTokens":1,"input_tokens":1}`,
		`{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":1}}`,
		`{"prompt_tokens":1,"prompt_tokens_details":{},"input_tokens_details":{}}`,
		`{"prompt_tokens":1,"prompt_tokens_details":3}`,
	} {
		v, err := fastjson.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := fastjsonParts(v); ok {
			t.Errorf("%s: %+v", body, p)
		}
	}
}
