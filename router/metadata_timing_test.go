package router

import (
	"sync"
	"testing"
)

// BenchmarkMetadataParse measures a typical header through a pooled parser,
// as the hot path uses it.
func BenchmarkMetadataParse(b *testing.B) {
	in := []byte(`{"tier":"gold","team":"search","priority":2,"beta":true,"ratio":1.50}`)
	pool := sync.Pool{New: func() any { return new(MetadataParser) }}
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p := pool.Get().(*MetadataParser)
			ps, err := p.Parse(in)
			if err != nil || len(ps) != 5 {
				b.Fatal("parse failed", err)
			}
			pool.Put(p)
		}
	})
}

// BenchmarkMetadataParseMax measures the largest accepted header shape:
// 32 entries.
func BenchmarkMetadataParseMax(b *testing.B) {
	in := []byte(objectOf(MaxMetadataEntries))
	var p MetadataParser
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := p.Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}
