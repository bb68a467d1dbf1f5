package harness

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Functions the Profiles section is computed from, as `go tool pprof`
// names them.
const (
	// HandlerFunc is Switchyard's request handler: everything the gateway
	// does for a request, the upstream exchange included.
	HandlerFunc = "github.com/switchyard/switchyard/hotpath.(*Gateway).Handler"
	// UpstreamFunc is the upstream exchange (write the request, read the
	// response), which the bare proxy does too.
	UpstreamFunc = "github.com/valyala/fasthttp.(*HostClient).DoDeadline"
	// SwitchyardPrefix starts every function of the module.
	SwitchyardPrefix = "github.com/switchyard/"
	// SwitchyardFocus is the -focus regexp selecting samples with a
	// Switchyard frame on their stack. Anchored so it cannot match the
	// binary's file name (pprof also matches mappings).
	SwitchyardFocus = `^github\.com/switchyard/`
	// ProfilerFocus selects samples of the profiler itself (the pprof
	// HTTP handler writing a profile).
	ProfilerFocus = `^(net/http|runtime)/pprof\.`
	// profileListed is how many Switchyard functions the CPU listing shows.
	profileListed = 12
)

// PprofRow is one line of `go tool pprof -top`: a function and its flat
// (own) and cum (own plus callees) values, in seconds for CPU profiles,
// bytes for space and plain counts for objects.
type PprofRow struct {
	Name      string
	Flat, Cum float64
}

// PprofTop is the parsed text of `go tool pprof -top`. Zero values mean
// the header lacked the figure.
type PprofTop struct {
	// Duration is the profile's "Duration:" (absent for -base diffs).
	Duration time.Duration
	// Total is the whole profile's total ("of X total"), filters ignored.
	Total float64
	// Shown is what the listed nodes account for ("Showing nodes
	// accounting for X"): with -focus and every node listed, the total of
	// the focused samples.
	Shown float64
	// Rows are the listed functions, in the listing's order; "(inline)"
	// is dropped from names.
	Rows []PprofRow
}

// ParsePprofTop parses the output of `go tool pprof -top` (with or
// without -cum, -focus, -base). Lines it does not know are skipped; an
// output with neither a total nor rows is an error.
func ParsePprofTop(text string) (*PprofTop, error) {
	t := &PprofTop{}
	header := false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "Duration:"):
			d, _, _ := strings.Cut(strings.TrimPrefix(trimmed, "Duration:"), ",")
			if v, ok := pprofValue(strings.TrimSpace(d)); ok {
				t.Duration = time.Duration(v * float64(time.Second))
			}
		case strings.HasPrefix(trimmed, "Showing nodes accounting for "):
			// "Showing nodes accounting for 4.37s, 96.26% of 4.54s total"
			rest := strings.TrimPrefix(trimmed, "Showing nodes accounting for ")
			shown, rest, _ := strings.Cut(rest, ",")
			t.Shown, _ = pprofValue(shown)
			if _, total, ok := strings.Cut(rest, " of "); ok {
				t.Total, _ = pprofValue(strings.TrimSuffix(strings.TrimSpace(total), " total"))
			}
		case strings.HasPrefix(trimmed, "flat ") && strings.Contains(trimmed, "cum%"):
			header = true
		case header && trimmed != "":
			f := strings.Fields(trimmed)
			if len(f) < 6 {
				continue
			}
			flat, ok1 := pprofValue(f[0])
			cum, ok2 := pprofValue(f[3])
			if !ok1 || !ok2 {
				continue
			}
			name := strings.TrimSuffix(strings.Join(f[5:], " "), " (inline)")
			t.Rows = append(t.Rows, PprofRow{Name: name, Flat: flat, Cum: cum})
		}
	}
	if t.Total == 0 && len(t.Rows) == 0 && !header {
		return nil, fmt.Errorf("harness: no pprof -top listing in %q", truncate(text, 200))
	}
	return t, nil
}

// pprofUnits converts pprof's unit suffixes to seconds or bytes.
var pprofUnits = []struct {
	suffix string
	scale  float64
}{
	// Longest first: "ms" before "s", "MB" before "B".
	{"mins", 60}, {"hrs", 3600}, {"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6}, {"μs", 1e-6}, {"ms", 1e-3}, {"s", 1},
	{"kB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"TB", 1 << 40}, {"PB", 1 << 50}, {"B", 1},
}

// pprofValue parses a pprof figure: "4.54s", "850ms", "1.52MB", "1481",
// "0", "-3".
func pprofValue(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	scale := 1.0
	for _, u := range pprofUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, scale = num, u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return v * scale, true
}

// Row returns the row of function name, if listed.
func (t *PprofTop) Row(name string) (PprofRow, bool) {
	for _, r := range t.Rows {
		if r.Name == name {
			return r, true
		}
	}
	return PprofRow{}, false
}

// SyscallFlat is the flat time of the raw system-call function
// (internal/runtime/syscall/linux.Syscall6 on current Go; the pre-1.23
// runtime/internal/syscall name is accepted too): time inside the kernel
// entry itself, for every syscall the process made.
func (t *PprofTop) SyscallFlat() (sec float64, name string) {
	for _, r := range t.Rows {
		if strings.HasSuffix(r.Name, ".Syscall6") &&
			(strings.HasPrefix(r.Name, "internal/runtime/syscall") || strings.HasPrefix(r.Name, "runtime/internal/syscall")) {
			sec += r.Flat
			name = r.Name
		}
	}
	return sec, name
}

// Profile is what profiling Switchyard under load found; it is rendered as
// the "## Profiles" section.
type Profile struct {
	// Err says why there is no profile ("" when there is one).
	Err string
	// Setup says, in Markdown, how the profiles were taken.
	Setup string
	// CPU is `go tool pprof -top -cum` of the CPU profile, every node
	// listed; CPURequests is how many requests the upstream served during
	// it (0: unknown).
	CPU         *PprofTop
	CPURequests int64
	// Allocs is `-top -sample_index=alloc_objects` of the allocations in
	// the allocation window (a -base diff), AllocsFocus the same with
	// -focus=SwitchyardFocus and AllocsProfiler with -focus=ProfilerFocus,
	// every node listed (nil: unknown). AllocsText and AllocsFocusText are
	// short listings of the first two, shown as they are. AllocRequests is
	// how many requests the upstream served in the window (0: unknown).
	Allocs, AllocsFocus, AllocsProfiler *PprofTop
	AllocsText, AllocsFocusText         string
	AllocRequests                       int64
	// Commands reproduce the profiles (shell, shown in a code block).
	Commands string
	// Notes are problems met on the way, one bullet each.
	Notes []string
	// Pair, when set, is the side-by-side CPU profile of the bare proxy
	// and Switchyard, written after the rest.
	Pair *ProfilePair
}

// OwnCPU is Switchyard's own request handling in the CPU profile: cum of
// HandlerFunc minus cum of UpstreamFunc, in seconds; ok false when either
// is missing.
func (p *Profile) OwnCPU() (float64, bool) {
	if p.CPU == nil {
		return 0, false
	}
	h, ok1 := p.CPU.Row(HandlerFunc)
	u, ok2 := p.CPU.Row(UpstreamFunc)
	if !ok1 || !ok2 {
		return 0, false
	}
	return h.Cum - u.Cum, true
}

func (p *Profile) write(b *strings.Builder) {
	p.writeOwn(b)
	if p.Pair != nil {
		p.Pair.write(b)
	}
}

func (p *Profile) writeOwn(b *strings.Builder) {
	if p.Err != "" {
		fmt.Fprintf(b, "Not profiled: %s\n\n", truncate(p.Err, 200))
		return
	}
	if p.Setup != "" {
		b.WriteString(p.Setup + "\n\n")
	}
	if p.CPU != nil {
		p.writeCPU(b)
	}
	if p.Allocs != nil {
		p.writeAllocs(b)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	if len(p.Notes) > 0 {
		b.WriteString("\n")
	}
	if p.Commands != "" {
		b.WriteString("To reproduce:\n\n```sh\n" + strings.TrimRight(p.Commands, "\n") + "\n```\n\n")
	}
}

// perReq formats sec seconds spread over n requests as µs or ns.
func perReq(sec float64, n int64) string {
	if n <= 0 {
		return "—"
	}
	us := sec / float64(n) * 1e6
	if us < 1 {
		return fmt.Sprintf("%.0f ns", us*1000)
	}
	return fmt.Sprintf("%.2f µs", us)
}

// share formats part as a percentage of total.
func share(part, total float64) string {
	if total <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", part/total*100)
}

func seconds(s float64) string { return fmt.Sprintf("%.2f s", s) }

func (p *Profile) writeCPU(b *strings.Builder) {
	c, n := p.CPU, p.CPURequests
	b.WriteString("### CPU\n\n")
	b.WriteString("| | CPU time | share of process CPU | per request |\n|---|--:|--:|--:|\n")
	busy := ""
	if c.Duration > 0 {
		busy = fmt.Sprintf(" over %s (%.0f%% of one core)", c.Duration.Round(time.Millisecond), c.Total/c.Duration.Seconds()*100)
	}
	fmt.Fprintf(b, "| whole process%s, %d requests | %s | 100%% | %s |\n", busy, n, seconds(c.Total), perReq(c.Total, n))
	if own, ok := p.OwnCPU(); ok {
		fmt.Fprintf(b, "| **Switchyard's own request handling**: `hotpath.(*Gateway).Handler` cum − `fasthttp.(*HostClient).DoDeadline` cum | %s | %s | %s |\n",
			seconds(own), share(own, c.Total), perReq(own, n))
	} else {
		b.WriteString("| Switchyard's own request handling | — (Handler or DoDeadline not in the profile) | — | — |\n")
	}
	if u, ok := c.Row(UpstreamFunc); ok {
		fmt.Fprintf(b, "| upstream exchange: `fasthttp.(*HostClient).DoDeadline` cum (the bare proxy does the same) | %s | %s | %s |\n",
			seconds(u.Cum), share(u.Cum, c.Total), perReq(u.Cum, n))
	}
	if h, ok := c.Row(HandlerFunc); ok {
		rest := c.Total - h.Cum
		fmt.Fprintf(b, "| outside the handler: fasthttp server (client connection reads and writes), runtime, GC | %s | %s | %s |\n",
			seconds(rest), share(rest, c.Total), perReq(rest, n))
	}
	if sc, name := c.SyscallFlat(); name != "" {
		fmt.Fprintf(b, "| system calls: `%s` flat (all of them, client and upstream side) | %s | %s | %s |\n",
			name, seconds(sc), share(sc, c.Total), perReq(sc, n))
	}
	b.WriteString("\n")

	var rows []PprofRow
	for _, r := range c.Rows {
		if strings.HasPrefix(r.Name, SwitchyardPrefix) && len(rows) < profileListed {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "Switchyard's functions by cumulative CPU (the first %d rows of `go tool pprof -top -cum` that are in github.com/switchyard/; flat is the function's own time, cum includes its callees, fasthttp's upstream exchange among them):\n\n", len(rows))
	b.WriteString("| function | flat | cum | cum share | cum per request |\n|---|--:|--:|--:|--:|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", strings.TrimPrefix(r.Name, "github.com/switchyard/switchyard/"),
			seconds(r.Flat), seconds(r.Cum), share(r.Cum, c.Total), perReq(r.Cum, n))
	}
	if u, ok := c.Row(UpstreamFunc); ok {
		fmt.Fprintf(b, "| `%s` (for reference) | %s | %s | %s | %s |\n", u.Name, seconds(u.Flat), seconds(u.Cum), share(u.Cum, c.Total), perReq(u.Cum, n))
	}
	b.WriteString("\n")
}

func (p *Profile) writeAllocs(b *strings.Builder) {
	a, n := p.Allocs, p.AllocRequests
	b.WriteString("### Allocations\n\n")
	per := func(v float64) string {
		if n <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.3f", v/float64(n))
	}
	fmt.Fprintf(b, "| allocations in the window (%d requests) | objects | per request |\n|---|--:|--:|\n", n)
	fmt.Fprintf(b, "| all | %.0f | %s |\n", a.Total, per(a.Total))
	if f := p.AllocsProfiler; f != nil {
		fmt.Fprintf(b, "| by the profiler itself (a net/http/pprof or runtime/pprof frame on the stack) | %.0f | %s |\n", f.Shown, per(f.Shown))
	}
	if f := p.AllocsFocus; f != nil {
		fmt.Fprintf(b, "| **with a github.com/switchyard/ frame on the stack** | %.0f | %s |\n", f.Shown, per(f.Shown))
	}
	b.WriteString("\n")
	if p.AllocsText != "" {
		b.WriteString("Top allocation sites in the window (`-sample_index=alloc_objects -top`):\n\n```\n" + strings.TrimRight(p.AllocsText, "\n") + "\n```\n\n")
	}
	if p.AllocsFocusText != "" {
		fmt.Fprintf(b, "Those with a Switchyard frame on the stack (`-sample_index=alloc_objects -top -focus='%s'`):\n\n```\n%s\n```\n\n", SwitchyardFocus, strings.TrimRight(p.AllocsFocusText, "\n"))
	}
}
