// Command hiccup measures how long the CPU it runs on is taken away from a
// busy thread: it spins reading the clock for -d and reports every gap
// longer than -min between two readings (time the thread did not run:
// other processes, interrupts, softirq work, a hypervisor). Pin it to the
// CPU to examine, e.g. `taskset -c 0 go run ./bench/cmd/hiccup -d 10s`.
// bench/HISTORY.md uses it to tell platform noise from the latency tails
// measured under load.
package main

import (
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	d := flag.Duration("d", 10*time.Second, "how long to spin")
	minGap := flag.Duration("min", 20*time.Microsecond, "shortest gap recorded")
	flag.Parse()
	runtime.LockOSThread()
	gaps := spin(*d, *minGap)
	fmt.Print(report(gaps, *d, *minGap))
}

// spin reads the clock in a loop for d and returns every gap over minGap.
func spin(d, minGap time.Duration) []time.Duration {
	var gaps []time.Duration
	start := time.Now()
	last := start
	for {
		now := time.Now()
		if g := now.Sub(last); g > minGap {
			gaps = append(gaps, g)
		}
		last = now
		if now.Sub(start) > d {
			return gaps
		}
	}
}

// report summarizes gaps seen over d: count, total, counts above
// thresholds and the largest ten.
func report(gaps []time.Duration, d, minGap time.Duration) string {
	var b strings.Builder
	var total time.Duration
	for _, g := range gaps {
		total += g
	}
	fmt.Fprintf(&b, "gaps over %v: %d in %v (%.1f/s), %v in all (%.2f%% of the time)\n",
		minGap, len(gaps), d, float64(len(gaps))/d.Seconds(), total, 100*total.Seconds()/d.Seconds())
	for _, th := range []time.Duration{50 * time.Microsecond, 100 * time.Microsecond, 500 * time.Microsecond,
		time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond} {
		n := 0
		for _, g := range gaps {
			if g > th {
				n++
			}
		}
		fmt.Fprintf(&b, "  over %v: %d\n", th, n)
	}
	sorted := slices.Clone(gaps)
	slices.SortFunc(sorted, func(a, b time.Duration) int { return int(b - a) })
	b.WriteString("  largest:")
	for _, g := range sorted[:min(10, len(sorted))] {
		fmt.Fprintf(&b, " %v", g.Round(time.Microsecond))
	}
	b.WriteString("\n")
	return b.String()
}
