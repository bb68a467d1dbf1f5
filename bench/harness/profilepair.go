package harness

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Functions the side-by-side CPU breakdown is computed from, as
// `go tool pprof` names them (fasthttp v1.78, Go 1.26).
const (
	// BareHandlerFunc is the bare proxy's request handler, the upstream
	// exchange included.
	BareHandlerFunc = "github.com/switchyard/switchyard/bench/bareproxy.(*Proxy).Handler"
	// BareUpstreamFunc is the bare proxy's upstream exchange (Switchyard's
	// DoDeadline calls it too, so it is inside UpstreamFunc there).
	BareUpstreamFunc = "github.com/valyala/fasthttp.(*HostClient).Do"
	// ServeConnFunc is fasthttp's per-connection server loop: reading
	// requests, calling the handler, writing responses.
	ServeConnFunc = "github.com/valyala/fasthttp.(*Server).serveConnCounted"
	// pairListed is how many Switchyard-only functions the breakdown lists.
	pairListed = 10
)

// ProxyProfile is one proxy's CPU profile in the side-by-side comparison.
type ProxyProfile struct {
	// Handler and Upstream name the proxy's request handler and its
	// upstream exchange (a callee of Handler).
	Handler, Upstream string
	// CPU is `go tool pprof -top -cum -nodefraction=0` of the profile
	// (nil: no profile).
	CPU *PprofTop
	// Own is the same listing restricted to the samples under Handler and
	// not under Upstream (OwnFilter); nil when not taken.
	Own *PprofTop
	// Requests is how many requests the upstream served during the
	// profile (0: unknown).
	Requests int64
}

// OwnFilter is the pprof -focus and -ignore pair selecting the samples
// of p's own request handling: under Handler, outside Upstream. Both are
// anchored so they match only the functions named.
func (p *ProxyProfile) OwnFilter() (focus, ignore string) {
	return "^" + regexp.QuoteMeta(p.Handler) + "$", "^" + regexp.QuoteMeta(p.Upstream) + "$"
}

// Figure is one CPU time of a breakdown, in seconds; OK false when a
// function it is computed from is not in the profile.
type Figure struct {
	Sec float64
	OK  bool
}

// CPUBreakdown splits a proxy's CPU profile into the parts the
// side-by-side table shows.
type CPUBreakdown struct {
	// Whole is the whole process.
	Whole Figure
	// Own is Handler cum − Upstream cum: the proxy's own request handling.
	Own Figure
	// Upstream is Upstream cum: the upstream exchange.
	Upstream Figure
	// Server is ServeConnFunc cum − Handler cum: fasthttp's server work
	// outside the handler (reading requests, writing responses).
	Server Figure
	// Outside is Whole − ServeConnFunc cum: the runtime scheduler,
	// netpoll, GC and anything else not on a connection's goroutine.
	Outside Figure
	// Syscalls is the raw system call's flat time (SyscallFlat).
	Syscalls Figure
}

// Breakdown computes p's CPUBreakdown; the zero value when p has no
// profile.
func (p *ProxyProfile) Breakdown() CPUBreakdown {
	var d CPUBreakdown
	c := p.CPU
	if c == nil {
		return d
	}
	d.Whole = Figure{c.Total, c.Total > 0}
	h, okH := c.Row(p.Handler)
	u, okU := c.Row(p.Upstream)
	s, okS := c.Row(ServeConnFunc)
	d.Own = Figure{h.Cum - u.Cum, okH && okU}
	d.Upstream = Figure{u.Cum, okU}
	d.Server = Figure{s.Cum - h.Cum, okS && okH}
	d.Outside = Figure{c.Total - s.Cum, okS && d.Whole.OK}
	if sec, name := c.SyscallFlat(); name != "" {
		d.Syscalls = Figure{sec, true}
	}
	return d
}

// ProfilePair is the side-by-side CPU profile of the bare proxy and
// Switchyard under the same load; it is rendered as a subsection of
// "## Profiles".
type ProfilePair struct {
	// Title is the subsection's heading.
	Title string
	// Err says why there is no comparison ("" when there is one).
	Err string
	// Setup says, in Markdown, how the profiles were taken.
	Setup string
	// Bare and Switchyard are the two proxies' profiles.
	Bare, Switchyard ProxyProfile
	// Notes are problems met on the way, one bullet each.
	Notes []string
}

// perReqUS is sec over n requests in µs, "—" when unknown.
func perReqUS(f Figure, n int64) string {
	if !f.OK || n <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", f.Sec/float64(n)*1e6)
}

// diffUS is Switchyard's figure per request minus the bare proxy's, in
// µs with a sign, "—" when either is unknown.
func diffUS(bare Figure, bn int64, sy Figure, sn int64) string {
	if !bare.OK || !sy.OK || bn <= 0 || sn <= 0 {
		return "—"
	}
	return fmt.Sprintf("%+.2f", (sy.Sec/float64(sn)-bare.Sec/float64(bn))*1e6)
}

// OnlyRows are the functions of Switchyard's own request handling (the
// Own listing) that the bare proxy's profile does not have at all,
// largest cum first, at most max, Switchyard's handler itself left out.
func (p *ProfilePair) OnlyRows(max int) []PprofRow {
	if p.Switchyard.Own == nil || p.Bare.CPU == nil {
		return nil
	}
	inBare := make(map[string]bool, len(p.Bare.CPU.Rows))
	for _, r := range p.Bare.CPU.Rows {
		inBare[r.Name] = true
	}
	var rows []PprofRow
	for _, r := range p.Switchyard.Own.Rows {
		if !inBare[r.Name] && r.Name != p.Switchyard.Handler && r.Cum > 0 {
			rows = append(rows, r)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Cum > rows[j].Cum })
	if len(rows) > max {
		rows = rows[:max]
	}
	return rows
}

// short drops the module and fasthttp prefixes from a function name.
func short(name string) string {
	for _, p := range []string{"github.com/switchyard/switchyard/", "github.com/valyala/"} {
		name = strings.TrimPrefix(name, p)
	}
	return name
}

func (p *ProfilePair) write(b *strings.Builder) {
	fmt.Fprintf(b, "### %s\n\n", p.Title)
	if p.Err != "" {
		fmt.Fprintf(b, "Not profiled: %s\n\n", truncate(p.Err, 200))
		return
	}
	if p.Setup != "" {
		b.WriteString(p.Setup + "\n\n")
	}
	bare, sy := &p.Bare, &p.Switchyard
	if bare.CPU != nil || sy.CPU != nil {
		bd, sd := bare.Breakdown(), sy.Breakdown()
		bn, sn := bare.Requests, sy.Requests
		fmt.Fprintf(b, "| CPU per request, µs | bare proxy (%d requests) | Switchyard (%d requests) | difference |\n|---|--:|--:|--:|\n", bn, sn)
		row := func(label string, bf, sf Figure) {
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", label, perReqUS(bf, bn), perReqUS(sf, sn), diffUS(bf, bn, sf, sn))
		}
		rate := func(pp *ProxyProfile) (float64, bool) {
			if pp.CPU == nil || pp.CPU.Duration <= 0 || pp.Requests <= 0 {
				return 0, false
			}
			return float64(pp.Requests) / pp.CPU.Duration.Seconds(), true
		}
		busy := func(pp *ProxyProfile) (float64, bool) {
			if pp.CPU == nil || pp.CPU.Duration <= 0 {
				return 0, false
			}
			return pp.CPU.Total / pp.CPU.Duration.Seconds() * 100, true
		}
		ratioRow := func(label, format string, f func(*ProxyProfile) (float64, bool)) {
			bv, okB := f(bare)
			sv, okS := f(sy)
			cell := func(v float64, ok bool) string {
				if !ok {
					return "—"
				}
				return fmt.Sprintf(format, v)
			}
			ratio := "—"
			if okB && okS && bv > 0 {
				ratio = fmt.Sprintf("%.2f×", sv/bv)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", label, cell(bv, okB), cell(sv, okS), ratio)
		}
		ratioRow("throughput over the profiles, requests/s (difference: Switchyard ÷ bare)", "%.0f", rate)
		ratioRow("process CPU busy, % of one core (difference: Switchyard ÷ bare)", "%.0f%%", busy)
		row("**whole process**", bd.Whole, sd.Whole)
		row(fmt.Sprintf("the proxy's own request handling: handler cum − upstream exchange cum (`%s` − `%s`; `%s` − `%s`)",
			short(bare.Handler), short(bare.Upstream), short(sy.Handler), short(sy.Upstream)), bd.Own, sd.Own)
		row(fmt.Sprintf("upstream exchange: `%s` cum; `%s` cum", short(bare.Upstream), short(sy.Upstream)), bd.Upstream, sd.Upstream)
		row(fmt.Sprintf("server work outside the handler: `%s` cum − handler cum", short(ServeConnFunc)), bd.Server, sd.Server)
		row(fmt.Sprintf("outside any connection's server loop (runtime scheduler, netpoll, GC, timers): whole − `%s` cum", short(ServeConnFunc)), bd.Outside, sd.Outside)
		row("system calls: `internal/runtime/syscall/linux.Syscall6` flat (all of them, included in the rows above)", bd.Syscalls, sd.Syscalls)
		b.WriteString("\n")
	}
	if rows := p.OnlyRows(pairListed); len(rows) > 0 {
		focus, ignore := sy.OwnFilter()
		fmt.Fprintf(b, "Where Switchyard's own request handling goes: the functions with the largest cum among its samples under the handler and outside the upstream exchange (`-focus='%s' -ignore='%s'`) that do not appear in the bare proxy's profile at all (functions both run, such as `runtime.mallocgc` or `runtime.memmove`, are left out even where Switchyard calls them more):\n\n",
			focus, ignore)
		b.WriteString("| function | flat per request, µs | cum per request, µs |\n|---|--:|--:|\n")
		for _, r := range rows {
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", short(r.Name), perReqUS(Figure{r.Flat, true}, sy.Requests), perReqUS(Figure{r.Cum, true}, sy.Requests))
		}
		b.WriteString("\n")
	}
	for _, n := range p.Notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	if len(p.Notes) > 0 {
		b.WriteString("\n")
	}
}
