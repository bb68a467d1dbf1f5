//go:build !race

package hotpath

import (
	"testing"

	"github.com/switchyard/switchyard/router"
)

func TestPeekAllocatesNothing(t *testing.T) {
	for _, c := range []struct {
		body     string
		messages bool
	}{
		{`{"model":"gpt-4o","messages":[{"role":"user","content":"hello \"there\""}],` +
			`"user":"alice","stream":true,"tools":[{"type":"function","function":{"name":"f"}}],"temperature":0.2}`, false},
		{`{"mod\u0065l":"gpt\u002d4o","us\u0065r":"al\u00e9","Messages":[],"stream":false}`, false},
		{`{"model":"claude","max_tokens":64,"metadata":{"user_id":"acme-1","x":[1]},"stream":true,"tools":[{}]}`, true},
		{string(chatBody(64 << 10)), false},
	} {
		body := []byte(c.body)
		p := &peek{}
		if err := p.parse(body, c.messages); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(200, func() {
			if err := p.parse(body, c.messages); err != nil || len(p.Model) == 0 {
				t.Fatal("parse failed", err)
			}
		}); n != 0 {
			t.Fatalf("peek allocates %v times per request on %.60q, want 0", n, c.body)
		}
	}
	// A Responses continuation: the id whose owner is checked is read too.
	body := []byte(`{"model":"gpt-5","input":[{"role":"user","content":"hi"}],"previous_response_\u0069d":"resp_0123456789abcdef","store":false}`)
	p := &peek{}
	if err := p.parseFor(body, router.SurfaceResponses); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if err := p.parseFor(body, router.SurfaceResponses); err != nil || string(p.Previous) != "resp_0123456789abcdef" {
			t.Fatal("parse failed", err)
		}
	}); n != 0 {
		t.Fatalf("peek allocates %v times per responses request, want 0", n)
	}
}
