package harness

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/load"
)

// Targets Switchyard is held to, relative to the bare proxy.
const (
	TargetThroughput = 0.90                   // minimum throughput ratio
	TargetCPU        = 1.15                   // maximum CPU-per-request ratio
	TargetP99Added   = 100 * time.Microsecond // p99 added at half the bare proxy's saturation
	TargetIdleRSS    = 64 << 20               // RSS holding 10,000 idle client connections
)

// Row is one measured scenario. Unknown figures are negative (CPUSeconds,
// Mallocs) or zero (PeakRSS, RSS).
type Row struct {
	Name   string
	Stream bool // an SSE scenario (the streaming table)
	// Result is the load driver's measurement; nil when Skipped.
	Result  *load.Result
	Skipped string // why the scenario did not run ("" when it ran)
	// CPUSeconds is the proxy process's user+system CPU over the measured run.
	CPUSeconds float64
	PeakRSS    int64 // VmHWM
	RSS        int64 // VmRSS after the run
	// Mallocs is the proxy's heap allocations over the measured run.
	Mallocs float64
	// Counts are the proxy's system calls and context switches over the
	// measured run; CountsOK false when unknown.
	Counts   Counts
	CountsOK bool
	Direct   *Row // the row "added" latencies subtract (nil: none)
	Bare     *Row // the baseline of the ratio checks (nil: none)
	// Extra is shown in the table's last column (e.g. Redis calls per request).
	Extra string
	Note  string // printed under Notes when non-empty
}

func (r *Row) ran() bool { return r.Result != nil && r.Skipped == "" }

func (r *Row) requests() float64 { return float64(r.Result.Completed + r.Result.Errors) }

// CPUPerRequest is proxy CPU time per request; ok false when unknown.
func (r *Row) CPUPerRequest() (time.Duration, bool) {
	if !r.ran() || r.CPUSeconds < 0 || r.requests() == 0 {
		return 0, false
	}
	return time.Duration(r.CPUSeconds / r.requests() * float64(time.Second)), true
}

// Point is one step of a latency-versus-offered-load sweep.
type Point struct {
	Offered float64 // open-loop rate, requests/s
	Result  *load.Result
}

// Series is a sweep of one proxy.
type Series struct {
	Name   string
	Points []Point
}

// At returns the point offered at rate (within 0.5%), or nil.
func (s *Series) At(rate float64) *Point {
	for i := range s.Points {
		if math.Abs(s.Points[i].Offered-rate) <= rate*0.005 {
			return &s.Points[i]
		}
	}
	return nil
}

// Idle is the memory cost of idle keep-alive client connections.
type Idle struct {
	Name                   string
	Wanted, Opened, Alive  int
	RSSBefore, RSSAfter    int64 // VmRSS without and with the connections
	StackInuse, Goroutines int64 // from the process's /metrics; 0 unknown
	Checked                bool  // held to TargetIdleRSS
	Err                    string
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPU, GoVersion, Kernel, LoadAvg string
	Cores                           int
	Date                            time.Time
}

// Report is everything one benchmark run measured.
type Report struct {
	Machine Machine
	Command string   // the command that produced the report
	Method  []string // how the run was set up, one bullet each
	Rows    []*Row
	// Sweeps are the latency-versus-offered-load series, Sweeps[0] the
	// baseline; p99 added is checked at HalfRate for the rows SweepFor maps
	// to a series.
	Sweeps   []Series
	HalfRate float64
	SweepFor map[string]string
	Idle     []Idle
	Sections []string // Markdown sections with tables of their own
	Notes    []string
}

// P99AddedAtHalf is the p99 at HalfRate of row's series minus the
// baseline's; ok false when either is missing.
func (rep *Report) P99AddedAtHalf(row *Row) (time.Duration, bool) {
	if len(rep.Sweeps) == 0 || rep.HalfRate <= 0 {
		return 0, false
	}
	b := rep.Sweeps[0].At(rep.HalfRate)
	var m *Point
	for i := range rep.Sweeps {
		if rep.Sweeps[i].Name == rep.SweepFor[row.Name] {
			m = rep.Sweeps[i].At(rep.HalfRate)
		}
	}
	if b == nil || m == nil || b.Result.Completed == 0 || m.Result.Completed == 0 {
		return 0, false
	}
	return m.Result.Latency.Quantile(0.99) - b.Result.Latency.Quantile(0.99), true
}

// Tables renders the scenario tables and the target checks.
func (rep *Report) Tables() string {
	var b strings.Builder
	rep.writeRows(&b, false)
	rep.writeRows(&b, true)
	rep.writeTargets(&b)
	for _, sec := range rep.Sections {
		b.WriteString(sec)
	}
	return b.String()
}

func (rep *Report) writeRows(b *strings.Builder, stream bool) {
	n := 0
	for _, r := range rep.Rows {
		if r.Stream == stream {
			n++
		}
	}
	if n == 0 {
		return
	}
	if stream {
		b.WriteString("| streaming scenario | streams/s | first event p50 | p99 | p50 added | p99 added | proxy CPU/stream | RSS after / peak | allocs/stream | reads / writes / context switches per stream | errors | |\n")
	} else {
		b.WriteString("| scenario | req/s | p50 | p99 | p50 added | p99 added | proxy CPU/req | RSS after / peak | allocs/req | reads / writes / context switches per req | errors | |\n")
	}
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--|\n")
	for _, r := range rep.Rows {
		if r.Stream != stream {
			continue
		}
		if !r.ran() {
			fmt.Fprintf(b, "| %s | skipped: %s ||||||||||\n", r.Name, truncate(r.Skipped, 160))
			continue
		}
		l := r.Result.Latency
		if stream {
			l = r.Result.FirstEvent
		}
		fmt.Fprintf(b, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Name, r.Result.Throughput(), FormatDuration(l.Quantile(0.5)), FormatDuration(l.Quantile(0.99)),
			added(r, 0.5, stream), added(r, 0.99, stream), cpuPerReq(r), rssCell(r), allocs(r), countsCell(r), errorsCell(r), r.Extra)
	}
	b.WriteString("\n")
}

// writeTargets renders the ratio checks of every row with a Bare baseline.
func (rep *Report) writeTargets(b *strings.Builder) {
	b.WriteString("| vs bare proxy | throughput (target ≥ 0.90×) | CPU/req (target ≤ 1.15×) | p99 added at half saturation (target ≤ 100 µs) |\n|---|--:|--:|--:|\n")
	for _, r := range rep.Rows {
		if r.Bare != nil {
			fmt.Fprintf(b, "| %s vs %s | %s | %s | %s |\n", r.Name, r.Bare.Name, throughputCheck(r), cpuCheck(r), rep.p99Check(r))
		}
	}
	b.WriteString("\n")
}

func throughputCheck(r *Row) string {
	if !r.ran() || !r.Bare.ran() || r.Bare.Result.Throughput() == 0 {
		return "n/a"
	}
	ratio := r.Result.Throughput() / r.Bare.Result.Throughput()
	return formatRatio(ratio, TargetThroughput) + " " + passMiss(ratio >= TargetThroughput)
}

func cpuCheck(r *Row) string {
	mine, ok1 := r.CPUPerRequest()
	base, ok2 := r.Bare.CPUPerRequest()
	if !ok1 || !ok2 || base == 0 {
		return "n/a"
	}
	ratio := float64(mine) / float64(base)
	return formatRatio(ratio, TargetCPU) + " " + passMiss(ratio <= TargetCPU)
}

func (rep *Report) p99Check(r *Row) string {
	if d, ok := rep.P99AddedAtHalf(r); ok {
		return FormatSignedDuration(d) + " " + passMiss(d <= TargetP99Added)
	}
	return "not measured"
}

// formatRatio prints a ratio with two decimals, or three when two would
// round it onto the target and hide which side of it the ratio is.
func formatRatio(ratio, target float64) string {
	if math.Abs(ratio-target) < 0.005 {
		return fmt.Sprintf("%.3f×", ratio)
	}
	return fmt.Sprintf("%.2f×", ratio)
}

func passMiss(ok bool) string {
	if ok {
		return "pass"
	}
	return "**miss**"
}

func added(r *Row, q float64, firstEvent bool) string {
	if r.Direct == nil || !r.Direct.ran() {
		return "—"
	}
	h, d := r.Result.Latency, r.Direct.Result.Latency
	if firstEvent {
		h, d = r.Result.FirstEvent, r.Direct.Result.FirstEvent
	}
	if h == nil || d == nil || h.Count() == 0 || d.Count() == 0 {
		return "n/a"
	}
	return FormatSignedDuration(h.Quantile(q) - d.Quantile(q))
}

func cpuPerReq(r *Row) string {
	if d, ok := r.CPUPerRequest(); ok {
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	}
	return "—"
}

func allocs(r *Row) string {
	if r.CPUSeconds < 0 || r.Mallocs < 0 || r.requests() == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", r.Mallocs/r.requests())
}

func countsCell(r *Row) string {
	if !r.CountsOK || r.requests() == 0 {
		return "—"
	}
	n := r.requests()
	return fmt.Sprintf("%.2f / %.2f / %.2f", float64(r.Counts.Reads)/n, float64(r.Counts.Writes)/n, float64(r.Counts.CtxSwitches)/n)
}

func rssCell(r *Row) string {
	if r.PeakRSS <= 0 {
		return "—"
	}
	return FormatBytes(r.RSS) + " / " + FormatBytes(r.PeakRSS)
}

func errorsCell(r *Row) string {
	if r.Result.Errors == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", r.Result.Errors, truncate(r.Result.FirstError, 60))
}

func truncate(s string, n int) string {
	s = strings.NewReplacer("|", "/", "\n", " ").Replace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// FormatDuration prints a latency in µs below 10 ms, else in ms.
func FormatDuration(d time.Duration) string {
	if d < 10*time.Millisecond && d > -10*time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// FormatSignedDuration is FormatDuration with an explicit sign.
func FormatSignedDuration(d time.Duration) string {
	if d >= 0 {
		return "+" + FormatDuration(d)
	}
	return "−" + FormatDuration(-d)
}

// FormatBytes prints a size in MiB (KiB below 1 MiB).
func FormatBytes(b int64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%.0f KiB", float64(b)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// Markdown renders the whole RESULTS.md.
func (rep *Report) Markdown() string {
	var b strings.Builder
	m := rep.Machine
	fmt.Fprintf(&b, "# Switchyard benchmark results\n\nProduced by `make bench` (`%s`) on %s.\n\n", rep.Command, m.Date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s, %d cores, Linux %s, %s; load average at start: %s\n", m.CPU, m.Cores, m.Kernel, m.GoVersion, m.LoadAvg)
	for _, s := range rep.Method {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	b.WriteString("\n## Request/response and streaming\n\n\"added\" subtracts the direct-to-mock figure at the same quantile; a skipped row says why.\n\n")
	rep.writeRows(&b, false)
	rep.writeRows(&b, true)
	b.WriteString("## Targets\n\nThroughput and CPU/request are ratios to the bare proxy under the same closed-loop load; p99 added is Switchyard's p99 minus the bare proxy's, both offered half of the bare proxy's saturation throughput in open loop.\n\n")
	rep.writeTargets(&b)
	for _, sec := range rep.Sections {
		b.WriteString(sec)
	}
	if len(rep.Sweeps) > 0 {
		b.WriteString("## Latency vs offered load\n\n")
		rep.writeSweep(&b)
	}
	if len(rep.Idle) > 0 {
		b.WriteString("## Idle keep-alive connections\n\n")
		rep.writeIdle(&b)
	}
	if len(rep.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range rep.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	for _, r := range rep.Rows {
		if r.Note != "" {
			fmt.Fprintf(&b, "- %s: %s\n", r.Name, r.Note)
		}
	}
	return b.String()
}

func (rep *Report) writeIdle(b *strings.Builder) {
	b.WriteString("| process | connections held | still open | RSS before | RSS with connections | per connection | goroutine stacks | goroutines | target ≤ 64 MiB |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, i := range rep.Idle {
		if i.Err != "" && i.Opened == 0 {
			fmt.Fprintf(b, "| %s | not measured: %s ||||||||\n", i.Name, truncate(i.Err, 80))
			continue
		}
		check, per := "—", "—"
		if i.Checked && i.Opened >= 10000 && i.RSSAfter > 0 {
			check = passMiss(i.RSSAfter <= TargetIdleRSS)
		}
		if i.Opened > 0 {
			per = fmt.Sprintf("%.1f KiB", float64(i.RSSAfter-i.RSSBefore)/float64(i.Opened)/1024)
		}
		fmt.Fprintf(b, "| %s | %d of %d | %d | %s | %s | %s | %s | %d | %s |\n", i.Name, i.Opened, i.Wanted, i.Alive,
			FormatBytes(i.RSSBefore), FormatBytes(i.RSSAfter), per, FormatBytes(i.StackInuse), i.Goroutines, check)
	}
	b.WriteString("\n")
}

func (rep *Report) writeSweep(b *strings.Builder) {
	b.WriteString("| offered req/s |")
	for _, s := range rep.Sweeps {
		fmt.Fprintf(b, " %s p50 | %s p99 | %s achieved |", s.Name, s.Name, s.Name)
	}
	b.WriteString("\n|--:|" + strings.Repeat("--:|--:|--:|", len(rep.Sweeps)) + "\n")
	for _, p0 := range rep.Sweeps[0].Points {
		fmt.Fprintf(b, "| %.0f |", p0.Offered)
		for i := range rep.Sweeps {
			p := rep.Sweeps[i].At(p0.Offered)
			if p == nil || p.Result.Completed == 0 {
				b.WriteString(" — | — | — |")
				continue
			}
			l := p.Result.Latency
			fmt.Fprintf(b, " %s | %s | %.0f |", FormatDuration(l.Quantile(0.5)), FormatDuration(l.Quantile(0.99)), p.Result.Throughput())
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}
