//go:build !race

package router

import "testing"

// A warmed-up MetadataParser parses a typical header without allocating:
// the hot path runs it on every chat and completions request that sends one.
func TestMetadataParseAllocs(t *testing.T) {
	headers := []string{
		`{"tier":"gold","team":"search","priority":2,"beta":true,"ratio":1.50}`,
		`{"caf\u00e9":"\ud83d\ude00 \"quoted\"","n":-1e3}`,
	}
	for _, h := range headers {
		in := []byte(h)
		var p MetadataParser
		if _, err := p.Parse(in); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			ps, err := p.Parse(in)
			if err != nil || len(ps) == 0 {
				t.Fatal("parse failed", err)
			}
		})
		if allocs != 0 {
			t.Errorf("Parse(%s) allocates %.1f times per call, want 0", h, allocs)
		}
	}
}
