package harness

import (
	"context"
	"encoding/xml"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/bench/bareproxy"
	"github.com/switchyard/switchyard/bench/load"
	"github.com/switchyard/switchyard/bench/mock"
)

// TestSmoke runs the harness end to end in-process for about a second:
// mock upstream, bare proxy, load driver, report. It checks the figures are
// sane (every request counted, the proxy really in the path, quantiles
// ordered, tables and chart rendered), never how fast anything is.
func TestSmoke(t *testing.T) {
	m, err := mock.Start("127.0.0.1:0", mock.Options{Name: "smoke", StreamEvents: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := bareproxy.NewServer(bareproxy.New(m.Addr()))
	go func() { _ = srv.Serve(ln) }()
	defer srv.Shutdown()
	proxyURL := "http://" + ln.Addr().String() + "/v1/chat/completions"
	directURL := "http://" + m.Addr() + "/v1/chat/completions"
	body := []byte(`{"model":"bench-model"}`)
	ctx := context.Background()
	run := func(url string, stream bool, rate float64) *load.Result {
		t.Helper()
		b := body
		if stream {
			b = []byte(`{"model":"bench-model","stream":true}`)
		}
		res, err := load.Run(ctx, load.Config{URL: url, Body: b, Connections: 4, Duration: 150 * time.Millisecond, Stream: stream, Rate: rate})
		if err != nil {
			t.Fatal(err)
		}
		if res.Completed == 0 || res.Errors != 0 {
			t.Fatalf("%s: %v", url, res)
		}
		l := res.Latency
		if !(l.Min() <= l.Quantile(0.5) && l.Quantile(0.5) <= l.Quantile(0.99) && l.Quantile(0.99) <= l.Quantile(0.999) && l.Quantile(0.999) <= l.Max()) {
			t.Fatalf("quantiles out of order: %v", res)
		}
		return res
	}

	before := m.Stats().Requests
	cpu0, err := CPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	direct := &Row{Name: "direct", Result: run(directURL, false, 0), CPUSeconds: -1, Mallocs: -1}
	bare := &Row{Name: "bare", Result: run(proxyURL, false, 0), Direct: direct, Mallocs: -1}
	cpu1, _ := CPUSeconds(os.Getpid())
	bare.CPUSeconds = cpu1 - cpu0 // this process: driver + mock + proxy
	// Every request the driver counted went through to the mock: twice
	// as many for the proxied run would mean a retry, fewer a fake answer.
	if got, want := m.Stats().Requests-before, direct.Result.Completed+bare.Result.Completed; got != want {
		t.Fatalf("mock saw %d requests, driver completed %d", got, want)
	}
	if cpu1 < cpu0 {
		t.Fatalf("CPU time went backwards: %v -> %v", cpu0, cpu1)
	}
	sseDirect := &Row{Name: "direct SSE", Stream: true, Result: run(directURL, true, 0), CPUSeconds: -1, Mallocs: -1}
	sseBare := &Row{Name: "bare SSE", Stream: true, Result: run(proxyURL, true, 0), Direct: sseDirect, CPUSeconds: -1, Mallocs: -1}
	if sseBare.Result.Events != sseBare.Result.Completed*5 {
		t.Fatalf("SSE through proxy: %d events for %d streams", sseBare.Result.Events, sseBare.Result.Completed)
	}
	sy := &Row{Name: "candidate", Result: run(proxyURL, false, 0), Direct: direct, Bare: bare, CPUSeconds: bare.CPUSeconds, Mallocs: -1}

	rate := 200.0
	rep := &Report{
		Machine:       Machine{CPU: "test CPU", Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Date: time.Now()},
		Command:       "go test",
		Rows:          []*Row{direct, bare, sy, sseDirect, sseBare, {Name: "skipped one", Skipped: "gateway not built"}},
		HalfRate:      rate,
		SweepBaseline: "bare",
		SweepFor:      map[string]string{"candidate": "cand"},
		Sweeps: []Series{
			{Name: "bare", Points: []Point{{Offered: rate, Result: run(proxyURL, false, rate)}, {Offered: 2 * rate, Result: run(proxyURL, false, 2*rate)}}},
			{Name: "cand", Points: []Point{{Offered: rate, Result: run(proxyURL, false, rate)}}},
		},
		Idle: []Idle{{Name: "bare", Wanted: 10, Opened: 10, Alive: 10, Sockets: 12, RSSBefore: 10 << 20, RSSAfter: 11 << 20}},
	}
	tables := rep.Tables()
	for _, want := range []string{"| direct |", "| bare |", "| candidate vs bare |", "| bare SSE |", "not run: gateway not built", "first event p50"} {
		if !strings.Contains(tables, want) {
			t.Errorf("tables lack %q:\n%s", want, tables)
		}
	}
	if _, ok := rep.P99AddedAtHalf(sy); !ok {
		t.Error("p99 added at half saturation not computed")
	}
	md := rep.Markdown("latency.svg")
	for _, want := range []string{"## Router match\n\n<!-- router table -->", "![p50 and p99 latency", "test CPU", "| offered req/s |", "102.4 KiB"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	checkSVG(t, rep.SVG(), 4) // two series × p50, p99
}

func checkSVG(t *testing.T, svg string, lines int) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	polylines := 0
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG is not well-formed XML: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	if polylines != lines {
		t.Fatalf("SVG has %d lines, want %d", polylines, lines)
	}
}

// TestTargetChecks feeds hand-made results through the pass/miss logic.
func TestTargetChecks(t *testing.T) {
	res := func(n int64, lat time.Duration, elapsed time.Duration) *load.Result {
		h := load.NewHistogram()
		for range n {
			h.Record(lat)
		}
		return &load.Result{Completed: n, Latency: h, Elapsed: elapsed}
	}
	bare := &Row{Name: "bare", Result: res(1000, 100*time.Microsecond, time.Second), CPUSeconds: 0.010, Mallocs: 5000, RSS: 10 << 20, PeakRSS: 12 << 20}
	good := &Row{Name: "good", Result: res(950, 150*time.Microsecond, time.Second), CPUSeconds: 0.0105, Mallocs: 0, Bare: bare}
	slow := &Row{Name: "slow", Result: res(800, 150*time.Microsecond, time.Second), CPUSeconds: 0.0200, Mallocs: -1, Bare: bare}
	rep := &Report{
		Rows: []*Row{bare, good, slow}, HalfRate: 500, SweepBaseline: "b",
		SweepFor: map[string]string{"good": "g", "slow": "s"},
		Sweeps: []Series{
			{Name: "b", Points: []Point{{Offered: 500, Result: res(10, 100*time.Microsecond, time.Second)}}},
			{Name: "g", Points: []Point{{Offered: 500, Result: res(10, 180*time.Microsecond, time.Second)}}},
			{Name: "s", Points: []Point{{Offered: 500, Result: res(10, 400*time.Microsecond, time.Second)}}},
		},
	}
	out := rep.Tables()
	for _, want := range []string{
		"| good vs bare | 0.95× pass | 1.11× pass | +80 µs pass |",
		"| slow vs bare | 0.80× **miss** | 2.50× **miss** | +300 µs **miss** |",
		"| bare | 1000 | 100 µs |", // quantiles are clamped to the observed min/max
		"| 10.0 µs | 1% | 10.0 MiB / 12.0 MiB | 5.0 |", "| n/a |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// With per-slice p99s the target cell shows the baseline's own spread,
	// and the Markdown lists every series' spread at half saturation.
	rep.Sweeps[0].Points[0].SliceP99 = []time.Duration{90 * time.Microsecond, 300 * time.Microsecond, 120 * time.Microsecond}
	rep.Sweeps[1].Points[0].SliceP99 = []time.Duration{170 * time.Microsecond, 190 * time.Microsecond}
	out = rep.Tables()
	if want := "| +80 µs pass (bare proxy's own slice p99: 90 µs–300 µs) |"; !strings.Contains(out, want) {
		t.Errorf("missing %q in:\n%s", want, out)
	}
	md := rep.Markdown("")
	for _, want := range []string{
		"| b | 100 µs | 100 µs | 3 | 90 µs | 120 µs | 300 µs |",
		"| g | 180 µs | 180 µs | 2 | 170 µs | 180 µs | 190 µs |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| s | 400 µs |") {
		t.Error("series without slice p99s listed in the spread table")
	}
	if got := formatRatio(1.1503, TargetCPU); got != "1.150×" {
		t.Errorf("ratio next to the target printed %q", got)
	}
	if got := formatRatio(0.93, TargetThroughput); got != "0.93×" {
		t.Errorf("ratio printed %q", got)
	}
	if d, ok := good.CPUPerRequest(); !ok || d < 11052*time.Nanosecond || d > 11053*time.Nanosecond {
		t.Errorf("CPU/request %v", d)
	}
}

func TestProcStartPinnedAndMeasured(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	ctx := context.Background()
	allowed, err := AllowedCPUs()
	if err != nil || len(allowed) == 0 {
		t.Fatalf("allowed CPUs %v %v", allowed, err)
	}
	cpu := allowed[len(allowed)-1]
	p, err := Start(ctx, "/bin/sh", []string{"-c", "echo listening http://127.0.0.1:9; echo oops >&2; exec sleep 30"},
		StartOptions{CPUs: []int{cpu}, WaitListening: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if p.Addr != "127.0.0.1:9" {
		t.Fatalf("addr %q", p.Addr)
	}
	st, err := os.ReadFile("/proc/" + itoa(p.PID()) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	pinned := "Cpus_allowed_list:\t" + strconv.Itoa(cpu) + "\n"
	if !strings.Contains(string(st), pinned) {
		t.Fatalf("child not pinned to CPU %d:\n%s", cpu, st)
	}
	if rss, err := MemStatus(p.PID(), "VmHWM"); err != nil || rss <= 0 {
		t.Fatalf("VmHWM %d %v", rss, err)
	}
	if _, err := CPUSeconds(p.PID()); err != nil {
		t.Fatal(err)
	}
	// The pinning does not leak: a child started without CPUs afterwards
	// (from whichever thread) may run anywhere.
	if len(allowed) > 1 {
		for range 20 {
			q, err := Start(ctx, "/bin/sh", []string{"-c", "exec sleep 30"}, StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st, _ := os.ReadFile("/proc/" + strconv.Itoa(q.PID()) + "/status")
			q.Stop()
			if strings.Contains(string(st), pinned) {
				t.Fatal("an unpinned child inherited the pinning")
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Log(), "oops") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(p.Log(), "oops") {
		t.Fatalf("stderr not collected: %q", p.Log())
	}
	p.Stop()
	if !p.Exited() {
		t.Fatal("Stop did not end the process")
	}

	if _, err := Start(ctx, "/bin/sh", []string{"-c", "echo hello"}, StartOptions{WaitListening: true}); err == nil ||
		!strings.Contains(err.Error(), `first line "hello"`) {
		t.Fatalf("wrong first line accepted: %v", err)
	}
	if _, err := Start(ctx, "/bin/sh", []string{"-c", "exit 3"}, StartOptions{WaitListening: true}); err == nil {
		t.Fatal("exited process reported as listening")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestScrapeCounter(t *testing.T) {
	page := "# HELP x\ngo_memstats_mallocs_total_extra 5\ngo_memstats_mallocs_total 12345\nother{a=\"b\"} 1\n"
	if v, ok := findSample([]byte(page), "go_memstats_mallocs_total"); !ok || v != 12345 {
		t.Fatalf("%v %v", v, ok)
	}
	if _, ok := findSample([]byte(page), "missing_total"); ok {
		t.Fatal("found a missing sample")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString(page) }}
	go func() { _ = s.Serve(ln) }()
	defer s.Shutdown()
	v, ok, err := ScrapeCounter("http://"+ln.Addr().String()+"/metrics", "go_memstats_mallocs_total")
	if err != nil || !ok || v != 12345 {
		t.Fatalf("%v %v %v", v, ok, err)
	}
}

func TestIdleConns(t *testing.T) {
	m, err := mock.Start("127.0.0.1:0", mock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ic, err := OpenIdle(context.Background(), m.Addr(), "/v1/models", 50, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	if ic.Len() != 50 || ic.Alive() != 50 {
		t.Fatalf("opened %d alive %d", ic.Len(), ic.Alive())
	}
	if n, err := CountSockets(os.Getpid()); err != nil || n < 100 { // both ends live in this process
		t.Fatalf("sockets %d %v", n, err)
	}
	if st := m.Stats(); st.ByPath["/v1/models"] != 50 {
		t.Fatalf("mock served %d", st.ByPath["/v1/models"])
	}
	_ = m.Close() // the server closes its side
	if a := ic.Alive(); a != 0 {
		t.Fatalf("%d connections alive after the server closed", a)
	}
}

// OpenIdleRequest holds connections that each completed the raw request
// given: here a POST that the mock must see as a chat completion.
func TestOpenIdleRequestPost(t *testing.T) {
	m, err := mock.Start("127.0.0.1:0", mock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	req := PostRequest(m.Addr(), "/v1/chat/completions", []byte(`{"model":"m","messages":[]}`), "Authorization: Bearer k")
	ic, err := OpenIdleRequest(context.Background(), m.Addr(), req, 20, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	if ic.Len() != 20 || ic.Alive() != 20 {
		t.Fatalf("opened %d alive %d", ic.Len(), ic.Alive())
	}
	if st := m.Stats(); st.ByPath["/v1/chat/completions"] != 20 {
		t.Fatalf("mock served %d chat completions: %+v", st.ByPath["/v1/chat/completions"], st)
	}
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{0, 1}, {7, 8}, {32214, 40000}, {10000, 10000}, {10001, 15000}, {51000, 60000}} {
		if got := niceCeil(c.in); got != c.want {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestSpread(t *testing.T) {
	us := time.Microsecond
	d := []time.Duration{5 * us, 1 * us, 9 * us, 3 * us}
	lo, med, hi := Spread(d)
	if lo != 1*us || med != 4*us || hi != 9*us {
		t.Errorf("Spread(even) = %v %v %v, want 1µs 4µs 9µs", lo, med, hi)
	}
	if d[0] != 5*us {
		t.Error("Spread modified its input")
	}
	if lo, med, hi = Spread(d[:3]); lo != us || med != 5*us || hi != 9*us {
		t.Errorf("Spread(odd) = %v %v %v, want 1µs 5µs 9µs", lo, med, hi)
	}
	if lo, med, hi = Spread(nil); lo != 0 || med != 0 || hi != 0 {
		t.Error("Spread(nil) not zeros")
	}
}
