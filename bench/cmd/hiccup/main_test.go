package main

import (
	"strings"
	"testing"
	"time"
)

func TestReport(t *testing.T) {
	gaps := []time.Duration{30 * time.Microsecond, 700 * time.Microsecond, 120 * time.Microsecond, 3 * time.Millisecond}
	got := report(gaps, 10*time.Second, 20*time.Microsecond)
	for _, want := range []string{
		"gaps over 20µs: 4 in 10s (0.4/s), 3.85ms in all (0.04% of the time)\n",
		"  over 50µs: 3\n", "  over 100µs: 3\n", "  over 500µs: 2\n", "  over 1ms: 1\n", "  over 2ms: 1\n", "  over 5ms: 0\n",
		"  largest: 3ms 700µs 120µs 30µs\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

// spin records only gaps over the threshold, each at least that long.
func TestSpin(t *testing.T) {
	gaps := spin(50*time.Millisecond, time.Millisecond)
	for _, g := range gaps {
		if g <= time.Millisecond {
			t.Fatalf("gap %v recorded under the 1ms threshold", g)
		}
	}
}
