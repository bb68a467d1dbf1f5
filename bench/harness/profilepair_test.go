package harness

import (
	"strings"
	"testing"
)

// bareTop is trimmed real output of `go tool pprof -top -cum
// -nodefraction=0` of the bare proxy under load (Go 1.26, fasthttp v1.78).
const bareTop = `Type: cpu
Duration: 8.02s, Total samples = 10s (124.69%)
Showing nodes accounting for 10s, 100% of 10s total
      flat  flat%   sum%        cum   cum%
     0.01s  0.10%  0.10%      9.00s 90.00%  github.com/valyala/fasthttp.(*Server).serveConnCounted
         0     0%  0.10%      6.00s 60.00%  github.com/switchyard/switchyard/bench/bareproxy.(*Proxy).Handler
     0.01s  0.10%  0.20%      5.00s 50.00%  github.com/valyala/fasthttp.(*HostClient).Do
     4.00s 40.00% 40.20%      4.00s 40.00%  internal/runtime/syscall/linux.Syscall6
     0.02s  0.20% 40.40%      4.00s 40.00%  syscall.RawSyscall6
     0.10s  1.00% 41.40%      0.30s  3.00%  runtime.mallocgc
         0     0% 41.40%      0.50s  5.00%  runtime.schedule
`

// syTop is the same for Switchyard (1 rule).
const syTop = `Type: cpu
Duration: 8.02s, Total samples = 12s (149.63%)
Showing nodes accounting for 12s, 100% of 12s total
      flat  flat%   sum%        cum   cum%
         0     0%     0%      10.00s 83.33%  github.com/valyala/fasthttp.(*Server).serveConnCounted
         0     0%     0%       8.00s 66.67%  github.com/switchyard/switchyard/hotpath.(*Gateway).Handler
         0     0%     0%       6.00s 50.00%  github.com/switchyard/switchyard/upstream.Walk (inline)
     5.00s 41.67% 41.67%       5.00s 41.67%  internal/runtime/syscall/linux.Syscall6
         0     0% 41.67%       5.00s 41.67%  github.com/valyala/fasthttp.(*HostClient).Do
         0     0% 41.67%       5.00s 41.67%  github.com/valyala/fasthttp.(*HostClient).DoDeadline
`

// syOwn is Switchyard's listing with OwnFilter applied.
const syOwn = `Type: cpu
Active filters:
   focus=^github\.com/switchyard/switchyard/hotpath\.\(\*Gateway\)\.Handler$
   ignore=^github\.com/valyala/fasthttp\.\(\*HostClient\)\.DoDeadline$
Showing nodes accounting for 3s, 25.00% of 12s total
      flat  flat%   sum%        cum   cum%
         0     0%     0%         3s 25.00%  github.com/switchyard/switchyard/hotpath.(*Gateway).Handler
         0     0%     0%         3s 25.00%  github.com/valyala/fasthttp.(*Server).serveConnCounted
     0.20s  1.67%  1.67%      0.40s  3.33%  github.com/switchyard/switchyard/telemetry.(*Target).Observe
     0.30s  2.50%  4.17%      0.30s  2.50%  runtime.mallocgc
     0.12s  1.00%  5.17%      1.00s  8.33%  github.com/switchyard/switchyard/hotpath.routeRequest
     0.48s  4.00%  9.17%      0.48s  4.00%  github.com/switchyard/switchyard/hotpath.(*peek).parse
`

func mustTop(t *testing.T, text string) *PprofTop {
	t.Helper()
	top, err := ParsePprofTop(text)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func testPair(t *testing.T) *ProfilePair {
	return &ProfilePair{
		Title: "CPU side by side",
		Setup: "Set up side by side.",
		Bare: ProxyProfile{Handler: BareHandlerFunc, Upstream: BareUpstreamFunc,
			CPU: mustTop(t, bareTop), Requests: 1_000_000},
		Switchyard: ProxyProfile{Handler: HandlerFunc, Upstream: UpstreamFunc,
			CPU: mustTop(t, syTop), Own: mustTop(t, syOwn), Requests: 800_000},
	}
}

func TestProxyProfileBreakdown(t *testing.T) {
	p := testPair(t)
	for _, c := range []struct {
		name string
		got  Figure
		want float64
	}{
		{"bare whole", p.Bare.Breakdown().Whole, 10},
		{"bare own", p.Bare.Breakdown().Own, 1},
		{"bare upstream", p.Bare.Breakdown().Upstream, 5},
		{"bare server", p.Bare.Breakdown().Server, 3},
		{"bare outside", p.Bare.Breakdown().Outside, 1},
		{"bare syscalls", p.Bare.Breakdown().Syscalls, 4},
		{"sy own", p.Switchyard.Breakdown().Own, 3},
		{"sy upstream (DoDeadline, not Do)", p.Switchyard.Breakdown().Upstream, 5},
		{"sy server", p.Switchyard.Breakdown().Server, 2},
		{"sy outside", p.Switchyard.Breakdown().Outside, 2},
		{"sy syscalls", p.Switchyard.Breakdown().Syscalls, 5},
	} {
		if !c.got.OK || !near(c.got.Sec, c.want) {
			t.Errorf("%s = %+v, want %v", c.name, c.got, c.want)
		}
	}

	// A profile without fasthttp's server loop: the figures computed from
	// it are unknown, not the handler's cum taken for zero.
	noServe := strings.Replace(bareTop, "github.com/valyala/fasthttp.(*Server).serveConnCounted", "github.com/valyala/fasthttp.(*Server).serveConnRenamed", 1)
	d := (&ProxyProfile{Handler: BareHandlerFunc, Upstream: BareUpstreamFunc, CPU: mustTop(t, noServe)}).Breakdown()
	if d.Server.OK || d.Outside.OK || !d.Own.OK || !d.Whole.OK {
		t.Errorf("without serveConnCounted: %+v", d)
	}
	// The wrong handler name (Switchyard's on the bare profile): no own
	// handling, no server split.
	d = (&ProxyProfile{Handler: HandlerFunc, Upstream: BareUpstreamFunc, CPU: mustTop(t, bareTop)}).Breakdown()
	if d.Own.OK || d.Server.OK || !d.Upstream.OK {
		t.Errorf("with a missing handler: %+v", d)
	}
	if d := (&ProxyProfile{}).Breakdown(); d.Whole.OK || d.Syscalls.OK {
		t.Errorf("no profile: %+v", d)
	}
}

func TestProfilePairOnlyRows(t *testing.T) {
	p := testPair(t)
	rows := p.OnlyRows(10)
	var names []string
	for _, r := range rows {
		names = append(names, short(r.Name))
	}
	// Largest cum first; the handler itself, fasthttp's server loop and
	// runtime.mallocgc (in the bare profile too) left out.
	want := "hotpath.routeRequest hotpath.(*peek).parse telemetry.(*Target).Observe"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("only rows %q, want %q", got, want)
	}
	if rows := p.OnlyRows(2); len(rows) != 2 {
		t.Fatalf("max 2: %d rows", len(rows))
	}
	p.Switchyard.Own = nil
	if rows := p.OnlyRows(10); rows != nil {
		t.Fatalf("rows without the filtered listing: %v", rows)
	}
}

func TestProfilePairMarkdown(t *testing.T) {
	p := testPair(t)
	// Switchyard's profile lacks serveConnCounted: its server rows and
	// their differences show "—".
	p.Switchyard.CPU = mustTop(t, strings.Replace(syTop, "(*Server).serveConnCounted", "(*Server).other", 1))
	rep := &Report{Profile: &Profile{Setup: "Pinned.", Pair: p}}
	md := rep.Markdown("")
	for _, want := range []string{
		"## Profiles\n\nPinned.\n\n### CPU side by side\n\nSet up side by side.\n\n",
		"| CPU per request, µs | bare proxy (1000000 requests) | Switchyard (800000 requests) | difference |\n",
		// 1e6 / 8.02 s; 8e5 / 8.02 s.
		"| throughput over the profiles, requests/s (difference: Switchyard ÷ bare) | 124688 | 99751 | 0.80× |\n",
		"| process CPU busy, % of one core (difference: Switchyard ÷ bare) | 125% | 150% | 1.20× |\n",
		// 10 s / 1e6 = 10 µs; 12 s / 8e5 = 15 µs.
		"| **whole process** | 10.00 | 15.00 | +5.00 |\n",
		// 1 s / 1e6 = 1 µs; 3 s / 8e5 = 3.75 µs.
		"`hotpath.(*Gateway).Handler` − `fasthttp.(*HostClient).DoDeadline`) | 1.00 | 3.75 | +2.75 |\n",
		"| upstream exchange: `fasthttp.(*HostClient).Do` cum; `fasthttp.(*HostClient).DoDeadline` cum | 5.00 | 6.25 | +1.25 |\n",
		"| server work outside the handler: `fasthttp.(*Server).serveConnCounted` cum − handler cum | 3.00 | — | — |\n",
		"whole − `fasthttp.(*Server).serveConnCounted` cum | 1.00 | — | — |\n",
		"flat (all of them, included in the rows above) | 4.00 | 6.25 | +2.25 |\n",
		"| function | flat per request, µs | cum per request, µs |\n|---|--:|--:|\n| `hotpath.routeRequest` | 0.15 | 1.25 |\n| `hotpath.(*peek).parse` | 0.60 | 0.60 |\n| `telemetry.(*Target).Observe` | 0.25 | 0.50 |\n\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| `runtime.mallocgc`") {
		t.Error("a function of both profiles listed as Switchyard-only")
	}

	rep.Profile = &Profile{Err: "no pprof build", Pair: &ProfilePair{Title: "CPU side by side", Err: "no pprof build"}}
	if md := rep.Markdown(""); !strings.Contains(md, "Not profiled: no pprof build\n\n### CPU side by side\n\nNot profiled: no pprof build\n") {
		t.Errorf("error markdown:\n%s", md)
	}
}
