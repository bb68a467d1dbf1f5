package jsonw

import (
	"strings"
	"testing"
)

// A tool result as a coding tool sends it back: code with quotes, tabs and
// newlines. The baseline is the byte-at-a-time writer String replaced.
var benchText = strings.Repeat("     4\tfunc (s *Snapshot) Match(r *Request) (int, []int) {\n\t\treturn s.match(r, \"default\") // héllo\n", 100)

func BenchmarkString(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchText)))
	var dst []byte
	for range b.N {
		dst = String(dst[:0], benchText)
	}
}

func BenchmarkStringBaselineBytewise(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchText)))
	var dst []byte
	for range b.N {
		dst = refString(dst[:0], benchText)
	}
}
