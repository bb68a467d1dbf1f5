package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// manyRulesYAML is a valid configuration with n model rules, as in the
// benchmark's 10,000-rule scenario.
func manyRulesYAML(n int) []byte {
	var b strings.Builder
	b.WriteString("strategy:\n  mode: conditional\n  conditions:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - key: model\n      value: model-%05d\n      target_key: primary\n", i)
	}
	b.WriteString("targets:\n  - virtual_key: primary\n    provider: openai\n    base_url: http://127.0.0.1:1/v1\n    api_key: k\n")
	return []byte(b.String())
}

// TestParseReturnsMemory checks that parsing a large file does not leave
// the syntax tree's pages resident: the heap memory the Go runtime holds
// from the OS (HeapSys minus HeapReleased, in use or not) must be small
// right after Parse. Without the release it is over 60 MiB for 10,000 rules
// (the dead tree, then its freed but unreturned pages), which a gateway
// would carry as RSS.
// Not parallel: it reads process-wide memory statistics.
func TestParseReturnsMemory(t *testing.T) {
	src := manyRulesYAML(10000)
	if len(src) < ReleaseMemoryBytes {
		t.Fatalf("test file of %d bytes is below ReleaseMemoryBytes", len(src))
	}
	cfg, err := Parse("big.yaml", src, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	held := m.HeapSys - m.HeapReleased
	t.Logf("after Parse: HeapAlloc %d KiB, HeapInuse %d KiB, heap held from the OS %d KiB",
		m.HeapAlloc>>10, m.HeapInuse>>10, held>>10)
	if held > 16<<20 {
		t.Errorf("%d MiB of heap held from the OS after parsing %d rules; want under 16 MiB", held>>20, len(cfg.Strategy.Conditions))
	}
	// What the Config itself keeps: the decoded rules, not the tree.
	runtime.KeepAlive(cfg)
}
