package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Targets Switchyard is held to, relative to the bare proxy.
const (
	targetThroughput = 0.90                   // minimum throughput ratio
	targetCPU        = 1.15                   // maximum CPU-per-request ratio
	targetP99Added   = 100 * time.Microsecond // p99 added at half the bare proxy's saturation
	targetStream     = 1.25                   // long-lived streams: CPU/event and RSS/stream ratios

	targetFeatureCPU      = 1.05 // limits (memory), residency, audit log: CPU/request over the row without
	targetRedisThroughput = 0.85 // limits on Redis: throughput of the same limits in memory
)

// table is a Markdown table: the first column left-aligned, the others
// right-aligned unless their header is empty.
type table struct {
	head []string
	rows [][]string
}

// add appends a row, padded with empty cells to the header's width.
func (t *table) add(cells ...string) {
	for len(cells) < len(t.head) {
		cells = append(cells, "")
	}
	t.rows = append(t.rows, cells)
}

func (t *table) String() string {
	if len(t.rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.head, " | ") + " |\n|")
	for i, h := range t.head {
		switch {
		case i == 0:
			b.WriteString("---|")
		case h == "":
			b.WriteString("--|")
		default:
			b.WriteString("--:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String() + "\n"
}

// rowTable is the request/response table, or with stream the streaming one.
func (b *bench) rowTable(stream bool) *table {
	t := &table{head: []string{"scenario", "req/s", "p50", "p99", "p50 added", "p99 added", "proxy CPU/req", "RSS after / peak", "allocs/req", "reads / writes / context switches per req", "errors", ""}}
	if stream {
		t.head = []string{"streaming scenario", "streams/s", "first event p50", "p99", "p50 added", "p99 added", "proxy CPU/stream", "RSS after / peak", "allocs/stream", "reads / writes / context switches per stream", "errors", ""}
	}
	for _, r := range b.rows {
		if r.stream != stream {
			continue
		}
		if r.res == nil {
			t.add(r.name, "skipped: "+clip(r.skipped, 160))
			continue
		}
		l := r.res.Latency
		if stream {
			l = r.res.FirstEvent
		}
		added := func(q float64) string {
			if r.direct == nil || r.direct.res == nil {
				return "—"
			}
			d := r.direct.res.Latency
			if stream {
				d = r.direct.res.FirstEvent
			}
			return signed(l.Quantile(q) - d.Quantile(q))
		}
		cpu, allocs, counts, rss, errs := "—", "—", "—", "—", "0"
		if n := r.requests(); r.used && !r.lost && n > 0 {
			cpu = fmt.Sprintf("%.1f µs", r.use.cpu/n*1e6)
			allocs = fmt.Sprintf("%.1f", r.use.mallocs/n)
			counts = fmt.Sprintf("%.2f / %.2f / %.2f", float64(r.use.reads)/n, float64(r.use.writes)/n, float64(r.use.ctxSwitches)/n)
		}
		if r.peak > 0 {
			rss = mib(r.rss) + " / " + mib(r.peak)
		}
		if r.res.Errors > 0 {
			errs = fmt.Sprintf("%d (%s)", r.res.Errors, clip(r.res.FirstError, 60))
		}
		t.add(r.name, fmt.Sprintf("%.0f", r.res.Throughput()), duration(l.Quantile(0.5)), duration(l.Quantile(0.99)),
			added(0.5), added(0.99), cpu, rss, allocs, counts, errs, r.extra)
	}
	return t
}

// targetTable holds every row with a baseline to the targets.
func (b *bench) targetTable() *table {
	t := &table{head: []string{"vs bare proxy", "throughput (target ≥ 0.90×)", "CPU/req (target ≤ 1.15×)", "p99 added at half saturation (target ≤ 100 µs)"}}
	for _, r := range b.rows {
		if r.bare == nil {
			continue
		}
		tput, cpu, p99 := "n/a", "n/a", "not measured"
		if r.res != nil && r.bare.res != nil && r.bare.res.Throughput() > 0 {
			tput = check(r.res.Throughput()/r.bare.res.Throughput(), targetThroughput, true)
		}
		if r.res != nil && r.bare.res != nil && r.used && !r.lost && r.bare.used && !r.bare.lost && r.bare.use.cpu > 0 {
			cpu = check(r.use.cpu/r.requests()/(r.bare.use.cpu/r.bare.requests()), targetCPU, false)
		}
		if d, ok := b.p99Half[r.name]; ok {
			p99 = signed(d) + " " + passMiss(d <= targetP99Added)
		}
		t.add(r.name+" vs "+r.bare.name, tput, cpu, p99)
	}
	return t
}

// costTable holds each feature row to the same row without its feature.
func (b *bench) costTable() *table {
	t := &table{head: []string{"feature row vs the same row without", "throughput", "CPU/req"}}
	for _, r := range b.rows {
		c := r.cost
		if c == nil {
			continue
		}
		tput, cpu := "n/a", "n/a"
		if r.res != nil && c.without.res != nil && c.without.res.Throughput() > 0 {
			tput = ratioTo(r.res.Throughput()/c.without.res.Throughput(), c.minTput, true)
		}
		if r.res != nil && c.without.res != nil && r.used && !r.lost && c.without.used && !c.without.lost && c.without.use.cpu > 0 {
			cpu = ratioTo(r.use.cpu/r.requests()/(c.without.use.cpu/c.without.requests()), c.maxCPU, false)
		}
		t.add(r.name+" vs "+c.without.name, tput, cpu)
	}
	return t
}

// ratioTo is check against target, or the bare ratio when target is 0.
func ratioTo(ratio, target float64, atLeast bool) string {
	if target == 0 {
		return fmt.Sprintf("%.2f×", ratio)
	}
	t := "≥"
	if !atLeast {
		t = "≤"
	}
	return check(ratio, target, atLeast) + fmt.Sprintf(" (target %s %.2f×)", t, target)
}

// check prints a ratio and whether it meets target (at least, or at most):
// two decimals, or three when two would round it onto the target.
func check(ratio, target float64, atLeast bool) string {
	f := "%.2f× %s"
	if math.Abs(ratio-target) < 0.005 {
		f = "%.3f× %s"
	}
	ok := ratio <= target
	if atLeast {
		ok = ratio >= target
	}
	return fmt.Sprintf(f, ratio, passMiss(ok))
}

func passMiss(ok bool) string {
	if ok {
		return "pass"
	}
	return "**miss**"
}

// markdown renders RESULTS.md.
func (b *bench) markdown(head string) string {
	var s strings.Builder
	s.WriteString("# Switchyard benchmark results\n\n" + head)
	for _, m := range b.method {
		s.WriteString("- " + m + "\n")
	}
	if len(b.rows) > 0 {
		s.WriteString("\n## Request/response and streaming\n\n\"added\" subtracts the direct-to-mock figure at the same quantile; a skipped row says why.\n\n")
		s.WriteString(b.rowTable(false).String() + b.rowTable(true).String())
		s.WriteString("## Targets\n\nThroughput and CPU/request are ratios to the bare proxy under the same closed-loop load; p99 added is Switchyard's p99 minus the bare proxy's, both offered half of the bare proxy's saturation throughput in open loop.\n\n")
		s.WriteString(b.targetTable().String())
		if t := b.costTable(); len(t.rows) > 0 {
			s.WriteString("\n## Feature cost\n\nEach feature row against the same configuration without that feature, measured in the same alternation: limits, residency and the audit log against client keys alone, Redis against the same limits in memory, tracing and the admin listener against the 1-rule row.\n\n")
			s.WriteString(t.String())
		}
	}
	s.WriteString(strings.Join(b.sections, ""))
	s.WriteString("## Notes\n\n")
	for _, n := range b.notes {
		s.WriteString("- " + n + "\n")
	}
	for _, r := range b.rows {
		if r.note != "" {
			s.WriteString("- " + r.name + ": " + r.note + "\n")
		}
	}
	return s.String()
}

// duration prints a latency in µs below 10 ms, else in ms.
func duration(d time.Duration) string {
	if d < 10*time.Millisecond && d > -10*time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + duration(d)
	}
	return "−" + duration(-d)
}

// mib prints a size in MiB (KiB below 1 MiB).
func mib(n int64) string {
	if n < 1<<20 && n > -1<<20 {
		return fmt.Sprintf("%.0f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// clip makes s fit a table cell of about n bytes.
func clip(s string, n int) string {
	s = strings.NewReplacer("|", "/", "\n", " ").Replace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
