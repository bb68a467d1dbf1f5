package provider

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSecretIndexMatchesBytes: the rare-byte search finds what
// bytes.Index finds, on text made of the secret's own bytes (so there are
// partial matches everywhere), on runs of its rarest byte (the misses that
// hand over to bytes.Index) and around the ends.
func TestSecretIndexMatchesBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, key := range []string{"bench-upstream-key", "sk-proj-Zm9vYmFyYmF6+/quxQ0123456789", "AKIAIOSFODNN7EXAMPLE", "aaaaaaaa", "zzzzzzzzq"} {
		ss := appendSecret(nil, key)
		if len(ss) != 1 {
			t.Fatalf("%q: no secret", key)
		}
		s := &ss[0]
		alphabet := key + ` "e`
		for range 3000 {
			n := r.IntN(3 * len(key))
			b := make([]byte, n)
			for i := range b {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
			if n >= len(key) && r.IntN(3) == 0 {
				copy(b[r.IntN(n-len(key)+1):], key)
			}
			if got, want := s.index(b), bytes.Index(b, s.value); got != want {
				t.Fatalf("%q in %q: index %d, bytes.Index %d", key, b, got, want)
			}
		}
		rare := strings.Repeat(string(key[s.rare]), 300)
		for _, b := range []string{rare, rare + key, key + rare, rare + key + rare, "", key, key[:len(key)-1], key[1:]} {
			if got, want := s.index([]byte(b)), strings.Index(b, key); got != want {
				t.Fatalf("%q in %q: index %d, strings.Index %d", key, b, got, want)
			}
		}
	}
}
