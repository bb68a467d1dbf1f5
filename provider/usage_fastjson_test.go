package provider

import (
	"testing"

	"github.com/valyala/fastjson"
)

func TestFastjsonUsageRefusesDoubt(t *testing.T) {
	for _, body := range []string{
		`{"prompt_tokens":1,"input_tokens":2}`, `{"input_tokens":1.5}`, `{"input_tokens":-1}`,
		`{"input_tokens":"1"}`, `{"input_tokens":1,"cache_read_input_tokens":"x"}`, `{}`, `[]`,
	} {
		v, err := fastjson.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := fastjsonUsage(v); ok {
			t.Errorf("%s: %+v", body, u)
		}
	}
}
