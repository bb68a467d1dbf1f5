package harness

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/load"
)

// Targets Switchyard is held to, relative to the bare proxy.
const (
	// TargetThroughput is the minimum throughput ratio.
	TargetThroughput = 0.90
	// TargetCPU is the maximum CPU-per-request ratio.
	TargetCPU = 1.15
	// TargetP99Added is the maximum p99 added at half the bare proxy's
	// saturation throughput.
	TargetP99Added = 100 * time.Microsecond
	// TargetIdleRSS is the maximum RSS of Switchyard holding 10,000 idle
	// keep-alive client connections.
	TargetIdleRSS = 64 << 20
)

// Row is one measured scenario. Unknown figures are negative (CPUSeconds,
// Allocs) or zero (PeakRSS).
type Row struct {
	// Name labels the row in tables.
	Name string
	// Stream marks an SSE scenario (reported in the streaming table).
	Stream bool
	// Result is the load driver's measurement; nil when Skipped.
	Result *load.Result
	// Skipped says why the scenario did not run ("" when it ran).
	Skipped string
	// CPUSeconds is the proxy process's user+system CPU over the measured
	// run; negative when there is no proxy process.
	CPUSeconds float64
	// PeakRSS is the proxy process's VmHWM in bytes; 0 when unknown.
	PeakRSS int64
	// RSS is the proxy process's VmRSS after the run; 0 when unknown.
	RSS int64
	// Mallocs is the proxy's heap allocations over the measured run;
	// negative when unknown (no /metrics or no go_memstats_mallocs_total).
	Mallocs float64
	// Direct is the row whose latency "added" figures subtract (nil: none).
	Direct *Row
	// Bare is the baseline of the ratio checks (nil: no targets checked).
	Bare *Row
	// Note is printed under the tables when non-empty.
	Note string
}

func (r *Row) ran() bool { return r.Result != nil && r.Skipped == "" }

// requests is the number of requests the proxy handled in the run.
func (r *Row) requests() float64 { return float64(r.Result.Completed + r.Result.Errors) }

// CPUPerRequest is proxy CPU time per request; ok false when unknown.
func (r *Row) CPUPerRequest() (time.Duration, bool) {
	if !r.ran() || r.CPUSeconds < 0 || r.requests() == 0 {
		return 0, false
	}
	return time.Duration(r.CPUSeconds / r.requests() * float64(time.Second)), true
}

// AllocsPerRequest is proxy allocations per request; ok false when unknown.
func (r *Row) AllocsPerRequest() (float64, bool) {
	if !r.ran() || r.Mallocs < 0 || r.requests() == 0 {
		return 0, false
	}
	return r.Mallocs / r.requests(), true
}

// Busy is the fraction of one CPU the proxy used during the run; near 1.0
// (with GOMAXPROCS=1) the proxy was the bottleneck.
func (r *Row) Busy() (float64, bool) {
	if !r.ran() || r.CPUSeconds < 0 || r.Result.Elapsed <= 0 {
		return 0, false
	}
	return r.CPUSeconds / r.Result.Elapsed.Seconds(), true
}

// Point is one step of a latency-versus-offered-load sweep.
type Point struct {
	// Offered is the open-loop rate in requests/s.
	Offered float64
	Result  *load.Result
	// SliceP99 is the p99 of each slice the point was measured in (nil:
	// not recorded); its spread shows how noisy Result's merged p99 is.
	SliceP99 []time.Duration
	// CPUSeconds is the proxy process's user+system CPU time read around
	// each slice's load run, summed; Wall is the wall time between those
	// readings, summed. Wall 0 (the zero value) means CPU unknown.
	CPUSeconds float64
	Wall       time.Duration
}

// Busy is the fraction of one CPU the proxy used during the point's slices
// (CPU time over wall time); ok false when unknown.
func (p *Point) Busy() (float64, bool) {
	if p.Wall <= 0 || p.CPUSeconds < 0 {
		return 0, false
	}
	return p.CPUSeconds / p.Wall.Seconds(), true
}

// CPUPerRequest is the proxy's CPU time per request sent during the point's
// slices; ok false when unknown.
func (p *Point) CPUPerRequest() (time.Duration, bool) {
	if p.Wall <= 0 || p.CPUSeconds < 0 || p.Result == nil {
		return 0, false
	}
	n := p.Result.Completed + p.Result.Errors
	if n == 0 {
		return 0, false
	}
	return time.Duration(p.CPUSeconds / float64(n) * float64(time.Second)), true
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
	// Name labels the process.
	Name string
	// Wanted is the number of connections the harness tried to open; Opened
	// how many completed a request; Alive how many were still open after
	// the measurement.
	Wanted, Opened, Alive int
	// Sockets is the process's open socket count while they were held.
	Sockets int
	// RSSBefore and RSSAfter are VmRSS without and with the connections.
	RSSBefore, RSSAfter int64
	// RSSAnon and RSSFile split the resident set while the connections were
	// held (read with RSSAfter) into anonymous memory (heap, goroutine
	// stacks, runtime structures) and file-backed pages (mostly the
	// executable's own code and data); 0 when unknown.
	RSSAnon, RSSFile int64
	// StackInuse and HeapInuse are go_memstats_stack_inuse_bytes and
	// go_memstats_heap_inuse_bytes, Goroutines is go_goroutines, scraped
	// from the process's /metrics while the connections were held; 0 when
	// unknown (a running Go process never reports 0).
	StackInuse, HeapInuse, Goroutines int64
	// Checked marks a row held to TargetIdleRSS (Switchyard's; not the
	// bare proxy's).
	Checked bool
	// Err says what went wrong, if anything.
	Err string
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPU       string
	Cores     int
	GoVersion string
	Kernel    string
	Date      time.Time
	LoadAvg   string
}

// Report is everything one benchmark run measured.
type Report struct {
	Machine Machine
	// Command is the exact command that produced the report.
	Command string
	// Method lists how the run was set up, one Markdown bullet each.
	Method []string
	Rows   []*Row
	// Sweeps are the latency-versus-offered-load series; HalfRate is the
	// rate (half the bare proxy's saturation throughput) at which p99 added
	// is checked; Sweeps[0] is the baseline.
	Sweeps   []Series
	HalfRate float64
	// SweepBaseline names the series the p99-added check subtracts, and
	// SweepFor maps a Row name to its series name.
	SweepBaseline string
	SweepFor      map[string]string
	Idle          []Idle
	// Profile is the pprof section; nil: not run.
	Profile *Profile
	// Sections are Markdown sections of scenarios with tables of their
	// own, printed after the targets.
	Sections []string
	// Notes are printed at the end, one bullet each.
	Notes []string
	// History, when non-empty, is appended verbatim at the end of the
	// Markdown under "## Before and after" (see LoadHistory).
	History string
}

// LoadHistory returns the content of the file at path (bench/HISTORY.md,
// written by hand), or "" with no error when there is no such file.
func LoadHistory(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

func (rep *Report) series(name string) *Series {
	for i := range rep.Sweeps {
		if rep.Sweeps[i].Name == name {
			return &rep.Sweeps[i]
		}
	}
	return nil
}

// P99AddedAtHalf is the p99 at HalfRate of row's series minus the
// baseline series'; ok false when either is missing.
func (rep *Report) P99AddedAtHalf(row *Row) (time.Duration, bool) {
	base, mine := rep.series(rep.SweepBaseline), rep.series(rep.SweepFor[row.Name])
	if base == nil || mine == nil || rep.HalfRate <= 0 {
		return 0, false
	}
	b, m := base.At(rep.HalfRate), mine.At(rep.HalfRate)
	if b == nil || m == nil || b.Result.Completed == 0 || m.Result.Completed == 0 {
		return 0, false
	}
	return m.Result.Latency.Quantile(0.99) - b.Result.Latency.Quantile(0.99), true
}

// Tables renders the scenario tables and the target checks (what benchrun
// prints).
func (rep *Report) Tables() string {
	var b strings.Builder
	rep.writeRequestTable(&b)
	rep.writeStreamTable(&b)
	rep.writeTargets(&b)
	for _, sec := range rep.Sections {
		b.WriteString(sec)
	}
	return b.String()
}

func (rep *Report) writeRequestTable(b *strings.Builder) {
	b.WriteString("| scenario | req/s | p50 | p99 | p99.9 | p50 added | p99 added | proxy CPU/req | proxy CPU busy | RSS after / peak | allocs/req | errors |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rep.Rows {
		if r.Stream {
			continue
		}
		if !r.ran() {
			fmt.Fprintf(b, "| %s | not run: %s |||||||||||\n", r.Name, r.Skipped)
			continue
		}
		l := r.Result.Latency
		fmt.Fprintf(b, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Name, r.Result.Throughput(), FormatDuration(l.Quantile(0.5)), FormatDuration(l.Quantile(0.99)),
			FormatDuration(l.Quantile(0.999)), added(r, 0.5, false), added(r, 0.99, false),
			cpuPerReq(r), busy(r), rssCell(r), allocs(r), errorsCell(r))
	}
	b.WriteString("\n")
}

func (rep *Report) writeStreamTable(b *strings.Builder) {
	hasStream := false
	for _, r := range rep.Rows {
		hasStream = hasStream || r.Stream
	}
	if !hasStream {
		return
	}
	b.WriteString("| streaming scenario | streams/s | first event p50 | first event p99 | first event p50 added | first event p99 added | whole stream p50 | whole stream p99 | proxy CPU/stream | proxy CPU busy | RSS after / peak | allocs/stream | errors |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rep.Rows {
		if !r.Stream {
			continue
		}
		if !r.ran() {
			fmt.Fprintf(b, "| %s | not run: %s ||||||||||||\n", r.Name, r.Skipped)
			continue
		}
		fe, l := r.Result.FirstEvent, r.Result.Latency
		fmt.Fprintf(b, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Name, r.Result.Throughput(), FormatDuration(fe.Quantile(0.5)), FormatDuration(fe.Quantile(0.99)),
			added(r, 0.5, true), added(r, 0.99, true), FormatDuration(l.Quantile(0.5)), FormatDuration(l.Quantile(0.99)),
			cpuPerReq(r), busy(r), rssCell(r), allocs(r), errorsCell(r))
	}
	b.WriteString("\n")
}

// writeTargets renders the ratio checks of every row with a Bare baseline.
func (rep *Report) writeTargets(b *strings.Builder) {
	var rows []*Row
	for _, r := range rep.Rows {
		if r.Bare != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("| vs bare proxy | throughput (target ≥ 0.90×) | CPU/req (target ≤ 1.15×) | p99 added at half saturation (target ≤ 100 µs) |\n")
	b.WriteString("|---|--:|--:|--:|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s vs %s | %s | %s | %s |\n", r.Name, r.Bare.Name,
			throughputCheck(r), cpuCheck(r), rep.p99Check(r))
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
	d, ok := rep.P99AddedAtHalf(r)
	if !ok {
		return "not measured"
	}
	out := fmt.Sprintf("%s %s", FormatSignedDuration(d), passMiss(d <= TargetP99Added))
	// How far the baseline's own p99 moves between slices: a difference
	// smaller than that is noise, not the proxy.
	if base := rep.series(rep.SweepBaseline); base != nil {
		if p := base.At(rep.HalfRate); p != nil && len(p.SliceP99) > 1 {
			lo, _, hi := Spread(p.SliceP99)
			out += fmt.Sprintf(" (bare proxy's own slice p99: %s–%s)", FormatDuration(lo), FormatDuration(hi))
		}
	}
	return out
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
	if r.Direct == nil || r.Direct == r || !r.Direct.ran() {
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

func busy(r *Row) string {
	if f, ok := r.Busy(); ok {
		return fmt.Sprintf("%.0f%%", f*100)
	}
	return "—"
}

func allocs(r *Row) string {
	if r.CPUSeconds < 0 {
		return "—"
	}
	if a, ok := r.AllocsPerRequest(); ok {
		return fmt.Sprintf("%.1f", a)
	}
	return "n/a"
}

func rssCell(r *Row) string {
	switch {
	case r.PeakRSS <= 0:
		return "—"
	case r.RSS <= 0:
		return "? / " + FormatBytes(r.PeakRSS)
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
	s = strings.ReplaceAll(s, "|", "/")
	s = strings.ReplaceAll(s, "\n", " ")
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

// Markdown renders the whole RESULTS.md. svgName, when non-empty, is the
// chart file linked from the sweep section.
func (rep *Report) Markdown(svgName string) string {
	var b strings.Builder
	m := rep.Machine
	b.WriteString("# Switchyard benchmark results\n\n")
	fmt.Fprintf(&b, "Produced by `make bench` (`%s`) on %s.\n\n", rep.Command, m.Date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s, %d cores, Linux %s; load average at start: %s\n", m.CPU, m.Cores, m.Kernel, m.LoadAvg)
	fmt.Fprintf(&b, "- Go: %s\n", m.GoVersion)
	for _, s := range rep.Method {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	b.WriteString("\n## Request/response and streaming\n\n")
	b.WriteString("\"added\" columns subtract the direct-to-mock figure at the same quantile; \"proxy CPU busy\" is the proxy's CPU time over wall time (100% = its one core was saturated).\n\n")
	rep.writeRequestTable(&b)
	rep.writeStreamTable(&b)
	b.WriteString("## Targets\n\n")
	b.WriteString("Throughput and CPU/request are ratios to the bare proxy under the same closed-loop load. p99 added is Switchyard's p99 minus the bare proxy's p99, both offered the same open-loop rate: half of the bare proxy's saturation throughput.\n\n")
	rep.writeTargets(&b)
	for _, sec := range rep.Sections {
		b.WriteString(sec)
	}
	if len(rep.Sweeps) > 0 {
		b.WriteString("## Latency vs offered load\n\n")
		if svgName != "" {
			fmt.Fprintf(&b, "![p50 and p99 latency against offered load](%s)\n\n", svgName)
		}
		rep.writeSweepTable(&b)
		rep.writeSpread(&b)
	}
	if len(rep.Idle) > 0 {
		b.WriteString("## Idle keep-alive connections\n\n")
		rep.writeIdle(&b)
	}
	b.WriteString("## Router match\n\n<!-- router table -->\n\n")
	if rep.Profile != nil {
		b.WriteString("## Profiles\n\n")
		rep.Profile.write(&b)
	}
	if len(rep.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range rep.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		for _, r := range rep.Rows {
			if r.Note != "" {
				fmt.Fprintf(&b, "- %s: %s\n", r.Name, r.Note)
			}
		}
		b.WriteString("\n")
	}
	if rep.History != "" {
		b.WriteString("## Before and after\n\n")
		b.WriteString(rep.History)
		if !strings.HasSuffix(rep.History, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// writeIdle renders the idle-connection table: RSS without and with the
// connections, and what the resident set held while they were open.
func (rep *Report) writeIdle(b *strings.Builder) {
	b.WriteString("| process | connections held | still open after | sockets in process | RSS before | RSS with connections | per connection | anonymous RSS | file-backed RSS (executable) | goroutine stacks | heap in use | goroutines | target ≤ 64 MiB |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, i := range rep.Idle {
		if i.Err != "" && i.Opened == 0 {
			fmt.Fprintf(b, "| %s | not measured: %s ||||||||||||\n", i.Name, truncate(i.Err, 80))
			continue
		}
		check := "—"
		if i.Checked && i.Opened >= 10000 && i.RSSAfter > 0 {
			check = passMiss(i.RSSAfter <= TargetIdleRSS)
		}
		per := "—"
		if i.Opened > 0 {
			per = fmt.Sprintf("%.1f KiB", float64(i.RSSAfter-i.RSSBefore)/float64(i.Opened)/1024)
		}
		fmt.Fprintf(b, "| %s | %d of %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", i.Name, i.Opened, i.Wanted, i.Alive,
			i.Sockets, FormatBytes(i.RSSBefore), FormatBytes(i.RSSAfter), per,
			bytesOrDash(i.RSSAnon), bytesOrDash(i.RSSFile), bytesOrDash(i.StackInuse), bytesOrDash(i.HeapInuse), countOrDash(i.Goroutines), check)
	}
	b.WriteString("\n")
}

func bytesOrDash(n int64) string {
	if n <= 0 {
		return "—"
	}
	return FormatBytes(n)
}

func countOrDash(n int64) string {
	if n <= 0 {
		return "—"
	}
	return fmt.Sprintf("%d", n)
}

func (rep *Report) writeSweepTable(b *strings.Builder) {
	b.WriteString("| offered req/s |")
	for _, s := range rep.Sweeps {
		fmt.Fprintf(b, " %s p50 | %s p99 | %s achieved | %s busy |", s.Name, s.Name, s.Name, s.Name)
	}
	b.WriteString("\n|--:|")
	for range rep.Sweeps {
		b.WriteString("--:|--:|--:|--:|")
	}
	b.WriteString("\n")
	var rates []float64
	for _, s := range rep.Sweeps {
		for _, p := range s.Points {
			if !containsRate(rates, p.Offered) {
				rates = append(rates, p.Offered)
			}
		}
	}
	sortFloats(rates)
	for _, rate := range rates {
		fmt.Fprintf(b, "| %.0f |", rate)
		for i := range rep.Sweeps {
			p := rep.Sweeps[i].At(rate)
			if p == nil || p.Result.Completed == 0 {
				b.WriteString(" — | — | — | — |")
				continue
			}
			l := p.Result.Latency
			fmt.Fprintf(b, " %s | %s | %.0f | %s |", FormatDuration(l.Quantile(0.5)), FormatDuration(l.Quantile(0.99)), p.Result.Throughput(), pointBusy(p))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// writeSpread renders, for the half-saturation step, each series' merged
// p99 next to the min/median/max of its per-slice p99s.
func (rep *Report) writeSpread(b *strings.Builder) {
	var lines []string
	for i := range rep.Sweeps {
		p := rep.Sweeps[i].At(rep.HalfRate)
		if p == nil || p.Result.Completed == 0 || len(p.SliceP99) == 0 {
			continue
		}
		lo, med, hi := Spread(p.SliceP99)
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", rep.Sweeps[i].Name,
			FormatDuration(p.Result.Latency.Quantile(0.5)), FormatDuration(p.Result.Latency.Quantile(0.99)),
			len(p.SliceP99), FormatDuration(lo), FormatDuration(med), FormatDuration(hi), pointBusy(p), pointCPU(p)))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "p99 at half saturation (%.0f req/s offered) and its spread across the alternating slices (each slice's own p99), with the proxy's CPU busy (its CPU time over the wall time of its slices) and CPU per request there. In open loop requests arrive spread out, and each pays wake-up and system-call costs that a saturated closed loop shares across many ready connections per wake-up, so CPU per request is higher than in the closed-loop rows and busy at half of closed-loop saturation can be far above 50%%; the busier the proxy's one core, the more often a request waits behind others, so p99 there grows with queueing, not with the work per request alone.\n\n", rep.HalfRate)
	b.WriteString("| series | p50 | p99 (all slices) | slices | slice p99 min | slice p99 median | slice p99 max | proxy CPU busy | proxy CPU/req |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, l := range lines {
		b.WriteString(l)
	}
	b.WriteString("\n")
}

func pointBusy(p *Point) string {
	if f, ok := p.Busy(); ok {
		return fmt.Sprintf("%.0f%%", f*100)
	}
	return "—"
}

func pointCPU(p *Point) string {
	if d, ok := p.CPUPerRequest(); ok {
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	}
	return "—"
}

// Spread returns the minimum, median and maximum of d (zeros when empty);
// d is not modified.
func Spread(d []time.Duration) (lo, med, hi time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	s := append([]time.Duration(nil), d...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s)%2 == 1 {
		med = s[len(s)/2]
	} else {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[0], med, s[len(s)-1]
}

func containsRate(rates []float64, r float64) bool {
	for _, x := range rates {
		if math.Abs(x-r) <= r*0.005 {
			return true
		}
	}
	return false
}

func sortFloats(a []float64) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
