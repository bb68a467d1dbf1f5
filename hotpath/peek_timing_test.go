package hotpath

import (
	"strconv"
	"testing"
)

// BenchmarkPeekSizes measures the peek on realistic chat bodies (chatBody)
// of 1 KB, 16 KB, 128 KB and 1 MB: the bytes per second are the figure
// (issue 12's target is ≥ 4 GB/s at 128 KB), with no allocation.
func BenchmarkPeekSizes(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10, 128 << 10, 1 << 20} {
		body := chatBody(size)
		b.Run(strconv.Itoa(size>>10)+"KB", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			p := &peek{}
			for b.Loop() {
				if err := p.parse(body, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
