package provider

import (
	"encoding/json"
	"testing"
)

func TestAppendErrorIsValidEnvelope(t *testing.T) {
	msgs := []string{"plain", `quote " and \ backslash`, "ctl\x00\x1f\n\t<&>", "bad utf8 \xff\xfe", "sep \u2028\u2029 ünï"}
	for _, m := range msgs {
		b := AppendError(nil, m, TypeInvalidRequest, CodeInvalidRequest)
		var env struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    string  `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatalf("%q: invalid JSON %s: %v", m, b, err)
		}
		want := m
		if m == "bad utf8 \xff\xfe" {
			want = "bad utf8 \ufffd\ufffd"
		}
		if env.Error.Message != want || env.Error.Type != TypeInvalidRequest || env.Error.Code != CodeInvalidRequest || env.Error.Param != nil {
			t.Fatalf("%q: round trip gave %+v", m, env.Error)
		}
	}
}
