package jsonscan

import (
	"math/rand/v2"
	"testing"
)

// stringEndRef is StringEnd written plainly: byte by byte, an escape
// skipping the byte after it.
func stringEndRef(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b)
}

// StringEnd agrees with the plain reading on strings of quotes,
// backslashes and letters of every length around its eight-byte steps and
// its switch to a vectorized search, terminated or not.
func TestStringEndMatchesPlainReading(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`ab"\\`)
	for n := range 20000 {
		b := make([]byte, 1+r.IntN(3*ShortString))
		b[0] = '"'
		for j := 1; j < len(b); j++ {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		if got, want := StringEnd(b, 0), stringEndRef(b, 0); got != want {
			t.Fatalf("case %d: StringEnd(%q) = %d, want %d", n, b, got, want)
		}
	}
}

func TestSkipSpace(t *testing.T) {
	b := []byte(" \t\r\n x ")
	if got := SkipSpace(b, 0); got != 5 {
		t.Errorf("SkipSpace = %d, want 5", got)
	}
	if got := SkipSpace(b, 6); got != 7 {
		t.Errorf("SkipSpace at the end = %d, want 7", got)
	}
}
