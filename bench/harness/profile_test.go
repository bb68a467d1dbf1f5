package harness

import (
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/bench/load"
)

// cpuTop is trimmed real output of `go tool pprof -top -cum -nodefraction=0`
// (Go 1.26) of Switchyard under load.
const cpuTop = `File: switchyard-pprof
Build ID: b584ea8d845b9be6cf6ecc37c4c2c02feec990b3
Type: cpu
Time: 2026-11-30 06:57:27 UTC
Duration: 5s, Total samples = 4.54s (90.80%)
Showing nodes accounting for 4.54s, 100% of 4.54s total
      flat  flat%   sum%        cum   cum%
         0     0%     0%      4.37s 96.26%  github.com/valyala/fasthttp.(*Server).serveConn
     3.09s 68.06% 68.50%      3.09s 68.06%  internal/runtime/syscall/linux.Syscall6
     0.02s  0.44% 68.94%      3.02s 66.52%  syscall.RawSyscall6
         0     0% 68.94%      2.56s 56.39%  github.com/switchyard/switchyard/hotpath.(*Gateway).Handler
         0     0% 68.94%      2.54s 55.95%  github.com/switchyard/switchyard/hotpath.(*Gateway).proxy
         0     0% 69.60%      2.28s 50.22%  github.com/switchyard/switchyard/upstream.Walk (inline)
     0.04s  0.88% 71.15%      2.25s 49.56%  github.com/switchyard/switchyard/upstream.(*walk).attempt
     0.01s  0.22% 71.37%         2s 44.05%  github.com/valyala/fasthttp.(*HostClient).DoDeadline
     0.01s  0.22% 73.57%      0.21s  4.63%  github.com/switchyard/switchyard/hotpath.routeRequest
     0.15s  3.30% 73.79%      150ms  3.30%  github.com/switchyard/switchyard/hotpath.(*peek).parse
`

// allocTop is real output of `-sample_index=alloc_objects -top -base`
// (no Duration line in a diff).
const allocTop = `File: switchyard-pprof
Type: alloc_objects
Time: 2026-11-30 06:57:27 UTC
Showing nodes accounting for 1446, 97.64% of 1481 total
Dropped 28 nodes (cum <= 7)
Showing top 3 nodes out of 33
      flat  flat%   sum%        cum   cum%
       872 58.88% 58.88%        872 58.88%  runtime/pprof.allFrames
       396 26.74% 85.62%        436 29.44%  runtime/pprof.(*profileBuilder).emitLocation
       103  6.95% 92.57%       1480 99.93%  runtime/pprof.writeHeapProto
`

// focusNone is what pprof prints when -focus matches nothing.
const focusNone = `Type: alloc_objects
Active filters:
   focus=^github\.com/switchyard/
Showing nodes accounting for 0, 0% of 1481 total
      flat  flat%   sum%        cum   cum%
`

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

func TestParsePprofTop(t *testing.T) {
	c, err := ParsePprofTop(cpuTop)
	if err != nil {
		t.Fatal(err)
	}
	if c.Duration != 5*time.Second || !near(c.Total, 4.54) || !near(c.Shown, 4.54) || len(c.Rows) != 10 {
		t.Fatalf("header: %+v, %d rows", c, len(c.Rows))
	}
	h, ok := c.Row(HandlerFunc)
	if !ok || h.Flat != 0 || !near(h.Cum, 2.56) {
		t.Fatalf("handler row %+v %v", h, ok)
	}
	if w, ok := c.Row("github.com/switchyard/switchyard/upstream.Walk"); !ok || !near(w.Cum, 2.28) {
		t.Fatalf("inline row not found without its (inline) mark: %+v", w)
	}
	if u, ok := c.Row(UpstreamFunc); !ok || !near(u.Cum, 2) || !near(u.Flat, 0.01) {
		t.Fatalf("DoDeadline row %+v %v", u, ok)
	}
	if p, _ := c.Row("github.com/switchyard/switchyard/hotpath.(*peek).parse"); !near(p.Cum, 0.15) {
		t.Fatalf("ms value parsed as %v", p.Cum)
	}
	// Only the raw syscall's flat, not syscall.RawSyscall6's.
	if sec, name := c.SyscallFlat(); !near(sec, 3.09) || name != "internal/runtime/syscall/linux.Syscall6" {
		t.Fatalf("syscalls %v %q", sec, name)
	}

	a, err := ParsePprofTop(allocTop)
	if err != nil {
		t.Fatal(err)
	}
	if a.Duration != 0 || a.Total != 1481 || a.Shown != 1446 || len(a.Rows) != 3 || a.Rows[2].Cum != 1480 {
		t.Fatalf("alloc top %+v", a)
	}
	f, err := ParsePprofTop(focusNone)
	if err != nil || f.Shown != 0 || f.Total != 1481 || len(f.Rows) != 0 {
		t.Fatalf("empty focus %+v %v", f, err)
	}
	if _, err := ParsePprofTop("go tool pprof: no such file\n"); err == nil {
		t.Fatal("garbage parsed")
	}
}

func TestPprofValue(t *testing.T) {
	for in, want := range map[string]float64{
		"0": 0, "4.54s": 4.54, "850ms": 0.85, "12us": 12e-6, "3ns": 3e-9, "2mins": 120, "1.5hrs": 5400,
		"1481": 1481, "-3": -3, "1.52MB": 1.52 * (1 << 20), "512kB": 512 << 10, "64B": 64, "2GB": 2 << 30,
	} {
		if got, ok := pprofValue(in); !ok || !near(got, want) {
			t.Errorf("pprofValue(%q) = %v %v, want %v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "s", "fast", "1.2.3s"} {
		if _, ok := pprofValue(bad); ok {
			t.Errorf("pprofValue(%q) accepted", bad)
		}
	}
}

func TestProfileMarkdown(t *testing.T) {
	c, _ := ParsePprofTop(cpuTop)
	a, _ := ParsePprofTop(allocTop)
	f, _ := ParsePprofTop(focusNone)
	p := &Profile{
		Setup: "Set up like so.", CPU: c, CPURequests: 230000,
		Allocs: a, AllocsFocus: f, AllocsProfiler: a, AllocRequests: 160000, AllocsText: "      flat  flat%\n       872 58.88%  runtime/pprof.allFrames\n",
		AllocsFocusText: "Showing nodes accounting for 0, 0% of 1481 total\n",
		Commands:        "go build -tags pprof .\n", Notes: []string{"something odd"},
	}
	if own, ok := p.OwnCPU(); !ok || !near(own, 0.56) {
		t.Fatalf("own CPU %v %v", own, ok)
	}
	rep := &Report{Profile: p}
	md := rep.Markdown("")
	for _, want := range []string{
		"## Profiles\n\nSet up like so.\n\n### CPU\n",
		"| whole process over 5s (91% of one core), 230000 requests | 4.54 s | 100% | 19.74 µs |",
		"`fasthttp.(*HostClient).DoDeadline` cum | 0.56 s | 12.3% | 2.43 µs |",
		"| upstream exchange: `fasthttp.(*HostClient).DoDeadline` cum (the bare proxy does the same) | 2.00 s | 44.1% | 8.70 µs |",
		"| outside the handler: fasthttp server (client connection reads and writes), runtime, GC | 1.98 s | 43.6% | 8.61 µs |",
		"| system calls: `internal/runtime/syscall/linux.Syscall6` flat (all of them, client and upstream side) | 3.09 s | 68.1% | 13.43 µs |",
		"the first 6 rows of `go tool pprof -top -cum`",
		"| `hotpath.(*Gateway).Handler` | 0.00 s | 2.56 s | 56.4% | 11.13 µs |",
		"| `hotpath.(*peek).parse` | 0.15 s | 0.15 s | 3.3% | 652 ns |",
		"| `github.com/valyala/fasthttp.(*HostClient).DoDeadline` (for reference) | 0.01 s | 2.00 s | 44.1% | 8.70 µs |",
		"### Allocations\n\n| allocations in the window (160000 requests) | objects | per request |",
		"| all | 1481 | 0.009 |",
		"| by the profiler itself (a net/http/pprof or runtime/pprof frame on the stack) | 1446 | 0.009 |",
		"| **with a github.com/switchyard/ frame on the stack** | 0 | 0.000 |",
		"`-sample_index=alloc_objects -top -focus='^github\\.com/switchyard/'`):\n\n```\nShowing nodes accounting for 0, 0% of 1481 total\n```",
		"```\n      flat  flat%\n       872 58.88%  runtime/pprof.allFrames\n```",
		"- something odd\n",
		"To reproduce:\n\n```sh\ngo build -tags pprof .\n```",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("profile section lacks %q:\n%s", want, md)
		}
	}
	// Non-Switchyard rows stay out of the function listing.
	if strings.Contains(md, "| `github.com/valyala/fasthttp.(*Server).serveConn`") {
		t.Error("fasthttp's serveConn listed among Switchyard's functions")
	}
	// Without the handler in the profile there is no own-CPU figure.
	p.CPU = &PprofTop{Total: 1, Rows: []PprofRow{{Name: UpstreamFunc, Cum: 0.5}}}
	if _, ok := p.OwnCPU(); ok {
		t.Error("own CPU computed without the handler")
	}
	if md := rep.Markdown(""); !strings.Contains(md, "| Switchyard's own request handling | — (Handler or DoDeadline not in the profile) |") {
		t.Errorf("missing handler not shown:\n%s", md)
	}
	rep.Profile = &Profile{Err: "switchyard does not build with -tags pprof"}
	if md := rep.Markdown(""); !strings.Contains(md, "## Profiles\n\nNot profiled: switchyard does not build with -tags pprof\n") {
		t.Errorf("error not shown:\n%s", md)
	}
	if md := (&Report{}).Markdown(""); strings.Contains(md, "## Profiles") {
		t.Error("Profiles section without a profile")
	}
}

func TestHistory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "HISTORY.md")
	if h, err := LoadHistory(path); err != nil || h != "" {
		t.Fatalf("missing file: %q %v", h, err)
	}
	if md := (&Report{Notes: []string{"n"}}).Markdown(""); strings.Contains(md, "Before and after") {
		t.Error("Before and after section without a history")
	}
	const hist = "Before the fix: p99 +2 ms.\n\n| run | p99 |\n|---|--:|\n| before | 5 ms |\n| after | 3 ms |"
	if err := os.WriteFile(path, []byte(hist), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := LoadHistory(path)
	if err != nil || h != hist {
		t.Fatalf("read %q %v", h, err)
	}
	md := (&Report{Notes: []string{"a note"}, History: h}).Markdown("")
	if !strings.HasSuffix(md, "## Before and after\n\n"+hist+"\n") {
		t.Fatalf("history not appended verbatim at the end:\n%s", md)
	}
	if strings.Index(md, "- a note") > strings.Index(md, "## Before and after") {
		t.Error("history not after the notes")
	}
	if _, err := LoadHistory(dir); err == nil {
		t.Error("reading a directory as history did not fail")
	}
}

func TestPointCPUAndSweepColumns(t *testing.T) {
	h := load.NewHistogram()
	for range 100 {
		h.Record(200 * time.Microsecond)
	}
	res := &load.Result{Completed: 90, Errors: 10, Latency: h, Elapsed: time.Second}
	p := Point{Offered: 100, Result: res, CPUSeconds: 0.8, Wall: 2 * time.Second,
		SliceP99: []time.Duration{100 * time.Microsecond, 300 * time.Microsecond}}
	if b, ok := p.Busy(); !ok || !near(b, 0.4) {
		t.Errorf("busy %v %v", b, ok)
	}
	if d, ok := p.CPUPerRequest(); !ok || d != 8*time.Millisecond {
		t.Errorf("CPU/request %v %v", d, ok)
	}
	unknown := Point{Offered: 100, Result: res, SliceP99: p.SliceP99}
	if _, ok := unknown.Busy(); ok {
		t.Error("busy known without wall time")
	}
	if _, ok := unknown.CPUPerRequest(); ok {
		t.Error("CPU/request known without wall time")
	}
	rep := &Report{HalfRate: 100, Sweeps: []Series{{Name: "b", Points: []Point{p}}, {Name: "s", Points: []Point{unknown}}}}
	md := rep.Markdown("")
	for _, want := range []string{
		"| offered req/s | b p50 | b p99 | b achieved | b busy | s p50 | s p99 | s achieved | s busy |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
		"| 100 | 200 µs | 200 µs | 90 | 40% | 200 µs | 200 µs | 90 | — |",
		"| series | p50 | p99 (all slices) | slices | slice p99 min | slice p99 median | slice p99 max | proxy CPU busy | proxy CPU/req |",
		"| b | 200 µs | 200 µs | 2 | 100 µs | 200 µs | 300 µs | 40% | 8000.0 µs |",
		"| s | 200 µs | 200 µs | 2 | 100 µs | 200 µs | 300 µs | — | — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
}

func TestIdleColumns(t *testing.T) {
	rep := &Report{Idle: []Idle{
		{Name: "full", Wanted: 10, Opened: 10, Alive: 10, Sockets: 12, RSSBefore: 10 << 20, RSSAfter: 30 << 20,
			RSSAnon: 26 << 20, RSSFile: 4 << 20, StackInuse: 20 << 20, HeapInuse: 3 << 20, Goroutines: 10012},
		{Name: "no metrics", Wanted: 10, Opened: 10, Alive: 9, Sockets: 12, RSSBefore: 10 << 20, RSSAfter: 11 << 20},
		{Name: "broken", Wanted: 10, Err: "connection refused"},
		{Name: "held, small", Wanted: 10000, Opened: 10000, Alive: 10000, RSSBefore: 10 << 20, RSSAfter: 64 << 20, Checked: true},
		{Name: "held, large", Wanted: 10000, Opened: 10000, Alive: 10000, RSSBefore: 10 << 20, RSSAfter: 65 << 20, Checked: true},
		{Name: "held, unchecked", Wanted: 10000, Opened: 10000, Alive: 10000, RSSBefore: 10 << 20, RSSAfter: 65 << 20},
		{Name: "too few held", Wanted: 10000, Opened: 9999, Alive: 9999, RSSBefore: 10 << 20, RSSAfter: 20 << 20, Checked: true},
	}}
	md := rep.Markdown("")
	for _, want := range []string{
		"| anonymous RSS | file-backed RSS (executable) | goroutine stacks | heap in use | goroutines | target ≤ 64 MiB |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
		"| full | 10 of 10 | 10 | 12 | 10.0 MiB | 30.0 MiB | 2048.0 KiB | 26.0 MiB | 4.0 MiB | 20.0 MiB | 3.0 MiB | 10012 | — |",
		"| no metrics | 10 of 10 | 9 | 12 | 10.0 MiB | 11.0 MiB | 102.4 KiB | — | — | — | — | — | — |",
		"| broken | not measured: connection refused ||||||||||||\n",
		"| held, small | 10000 of 10000 |", "64.0 MiB | 5.5 KiB | — | — | — | — | — | pass |",
		"| held, large | 10000 of 10000 |", "65.0 MiB | 5.6 KiB | — | — | — | — | — | **miss** |",
		"| held, unchecked |", "65.0 MiB | 5.6 KiB | — | — | — | — | — | — |",
		"| too few held | 9999 of 10000 |", "| — | — | — | — | — | — |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
}

func TestParseStatusAndMemStatuses(t *testing.T) {
	status := "Name:\tswitchyard\nVmHWM:\t   20480 kB\nVmRSS:\t   18432 kB\nRssAnon:\t   12288 kB\nRssFile:\t    6144 kB\nRssShmem:\t       0 kB\nThreads:\t5\n"
	v, err := parseStatus(status, []string{"RssFile", "VmRSS", "RssAnon"})
	if err != nil || v[0] != 6144<<10 || v[1] != 18432<<10 || v[2] != 12288<<10 {
		t.Fatalf("%v %v", v, err)
	}
	if _, err := parseStatus(status, []string{"VmRSS", "VmSwap"}); err == nil || !strings.Contains(err.Error(), "no VmSwap") {
		t.Fatalf("missing field: %v", err)
	}
	if _, err := parseStatus("VmRSS:\tlots kB\n", []string{"VmRSS"}); err == nil {
		t.Fatal("bad number accepted")
	}
	// This process: the split adds up to (at most) the resident set.
	v, err = MemStatuses(os.Getpid(), "VmRSS", "RssAnon", "RssFile")
	if err != nil {
		t.Fatal(err)
	}
	if v[1] <= 0 || v[2] <= 0 || v[1]+v[2] > v[0]+(1<<20) {
		t.Fatalf("VmRSS %d, RssAnon %d, RssFile %d", v[0], v[1], v[2])
	}
}

func TestScrapeSamples(t *testing.T) {
	page := "go_goroutines 10012\ngo_memstats_stack_inuse_bytes 2.097152e+07\ngo_memstats_heap_inuse_bytes{x=\"y\"} 5\n"
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) != "/metrics" {
			ctx.SetStatusCode(404)
			return
		}
		ctx.SetBodyString(page)
	}}
	go func() { _ = s.Serve(ln) }()
	defer s.Shutdown()
	url := "http://" + ln.Addr().String()
	v, found, err := ScrapeSamples(url+"/metrics", "go_memstats_stack_inuse_bytes", "go_memstats_heap_inuse_bytes", "go_goroutines")
	if err != nil {
		t.Fatal(err)
	}
	// A labelled sample is not the unlabelled one asked for.
	if !found[0] || v[0] != 20971520 || found[1] || !found[2] || v[2] != 10012 {
		t.Fatalf("%v %v", v, found)
	}
	if _, _, err := ScrapeSamples(url+"/nope", "go_goroutines"); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Fatalf("404 not an error: %v", err)
	}
}
