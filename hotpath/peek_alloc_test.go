//go:build !race

package hotpath

import "testing"

func TestPeekAllocatesNothing(t *testing.T) {
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello \"there\""}],` +
		`"user":"alice","stream":true,"tools":[{"type":"function","function":{"name":"f"}}],"temperature":0.2}`)
	p := &peek{}
	if err := p.parse(body, false); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if err := p.parse(body, false); err != nil || !p.Stream || !p.HasTools {
			t.Fatal("parse failed", err)
		}
	}); n != 0 {
		t.Fatalf("peek allocates %v times per request, want 0", n)
	}
}
