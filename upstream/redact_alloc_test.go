//go:build !race

package upstream

import (
	"strings"
	"testing"
)

// redact allocates nothing when no credential occurs (with or without
// escapes, relevant to the key or not) and once when some do, however many.
func TestRedactAllocs(t *testing.T) {
	tg := &Target{secrets: secretsOf(&Endpoint{AWSAccessKeyID: "AKIAIOSFODNN7EXAMPLE",
		AWSSecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", AWSSessionToken: "IQoJb3JpZ2luX2VjEJr//////////wEaCXVz"})}
	none := map[string][]byte{
		"literal":           answer128K(false),
		"unrelated escapes": answer128K(true),
		"relevant escapes":  []byte(strings.Repeat(`{"u":"https:\/\/AKIA.example\/wJal\u0072X"}`, 100)),
		"escaped near-miss": []byte(`AKIAIOSFODNN7EXAMPL\u0046`),
	}
	for name, b := range none {
		if n := testing.AllocsPerRun(50, func() { tg.redact(b) }); n != 0 {
			t.Errorf("%s: %.0f allocations, want 0", name, n)
		}
	}
	some := []byte(strings.Repeat(`"AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI\/K7MDENG\u002FbPxRfiCYEXAMPLEKEY IQoJb3JpZ2luX2VjEJr//////////wEaCXVz" `, 50))
	if n := testing.AllocsPerRun(50, func() { tg.redact(some) }); n != 1 {
		t.Errorf("150 occurrences: %.0f allocations, want 1", n)
	}
}
