package hotpath

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/upstream"
)

// manyModelRules is a configuration with n model rules ("model-00000"...)
// to one target, as in the benchmark's 10,000-rule scenario.
func manyModelRules(n int) string {
	var b strings.Builder
	b.WriteString("strategy:\n  mode: conditional\n  conditions:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - {key: model, value: model-%05d, target_key: a}\n", i)
	}
	b.WriteString("targets:\n  - {virtual_key: a, provider: openai, base_url: \"http://127.0.0.1:1/v1\", api_key: k}\n")
	return b.String()
}

// liveHeapOf returns the live heap after a full collection while the
// result of build is still reachable.
func liveHeapOf(build func() any) (uint64, any) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	return m1.HeapAlloc - min(m0.HeapAlloc, m1.HeapAlloc), v
}

// TestRetainedHeapPerRule bounds what a loaded rule keeps alive: the
// decoded config condition, the compiled router entry (model map slot,
// chain, rule kept for explain) and its share of the /v1/models answer
// (every model a rule names is listed). It measures the live heap of a
// State with 10,000 rules against one with 1 rule. Not parallel: it
// reads process-wide memory statistics.
func TestRetainedHeapPerRule(t *testing.T) {
	const n = 10000
	build := func(src string) func() any {
		return func() any {
			st, err := Build(mustParse(t, src), upstream.NewPool(), time.Unix(0, 0))
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
	}
	// The heap is process-wide: memory another test's leftovers free while
	// the large State is built can make it measure smaller than the small
	// one. Such a run says nothing, so it is measured again (at most 3 times).
	var small, large uint64
	var s1, s2 any
	for range 3 {
		small, s1 = liveHeapOf(build(manyModelRules(1)))
		large, s2 = liveHeapOf(build(manyModelRules(n)))
		if large >= small {
			break
		}
	}
	if large < small {
		t.Fatalf("live heap shrank while 10,000 rules were built (%d < %d bytes) in 3 runs: the process is too busy to measure", large, small)
	}
	per := float64(large-small) / (n - 1)
	t.Logf("live heap: 1 rule %d KiB, %d rules %d KiB: %.0f bytes per rule", small>>10, n, large>>10, per)
	if per > 500 {
		t.Errorf("%.0f bytes of live heap per rule; want at most 500", per)
	}
	runtime.KeepAlive(s1)
	runtime.KeepAlive(s2)
}
