package main

import (
	"strings"
	"testing"
)

func TestParseBenchAndRouterRatios(t *testing.T) {
	out := []byte(`goos: linux
BenchmarkMatch/10-2         	 2958919	        17.23 ns/op	       0 B/op	       0 allocs/op
BenchmarkMatch/10000-2      	 1208028	        49.98 ns/op	       0 B/op	       0 allocs/op
BenchmarkLinearScan/10000-2 	   40000	     27994 ns/op	       0 B/op	       0 allocs/op
BenchmarkPeek-2   21115   1030 ns/op   1108.34 MB/s   0 B/op   0 allocs/op
BenchmarkTranslateRequestBedrockSigV4-2   100  7993 ns/op  4100 B/op  60 allocs/op
PASS
`)
	lines := parseBench(out)
	if len(lines) != 5 {
		t.Fatalf("parsed %d lines: %+v", len(lines), lines)
	}
	if l := lines[3]; l.name != "BenchmarkPeek" || l.nsOp != 1030 || l.allocs != 0 {
		t.Fatalf("peek line %+v", l)
	}
	if l := lines[4]; l.name != "BenchmarkTranslateRequestBedrockSigV4" || l.nsOp != 7993 || l.bytesOp != 4100 || l.allocs != 60 {
		t.Fatalf("last line %+v", l)
	}
	var b strings.Builder
	writeRouterRatios(&b, lines)
	if got := b.String(); !strings.Contains(got, "| 10000 | 50.0 ns | 28.0 µs | 560× |") || strings.Contains(got, "| 10 |") {
		t.Fatalf("ratios table:\n%s", got)
	}
}
