package harness

import (
	"context"
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
	"github.com/switchyard/switchyard/mock"
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
		Machine:  Machine{CPU: "test CPU", Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Date: time.Now()},
		Command:  "go test",
		Rows:     []*Row{direct, bare, sy, sseDirect, sseBare, {Name: "skipped one", Skipped: "gateway not built"}},
		HalfRate: rate,
		SweepFor: map[string]string{"candidate": "cand"},
		Sweeps: []Series{
			{Name: "bare", Points: []Point{{Offered: rate, Result: run(proxyURL, false, rate)}, {Offered: 2 * rate, Result: run(proxyURL, false, 2*rate)}}},
			{Name: "cand", Points: []Point{{Offered: rate, Result: run(proxyURL, false, rate)}}},
		},
		Idle: []Idle{{Name: "bare", Wanted: 10, Opened: 10, Alive: 10, RSSBefore: 10 << 20, RSSAfter: 11 << 20}},
	}
	tables := rep.Tables()
	for _, want := range []string{"| direct |", "| bare |", "| candidate vs bare |", "| bare SSE |", "skipped: gateway not built", "first event p50"} {
		if !strings.Contains(tables, want) {
			t.Errorf("tables lack %q:\n%s", want, tables)
		}
	}
	if _, ok := rep.P99AddedAtHalf(sy); !ok {
		t.Error("p99 added at half saturation not computed")
	}
	md := rep.Markdown()
	for _, want := range []string{"test CPU", "| offered req/s |", "102.4 KiB", "skipped: gateway not built"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
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
		Rows: []*Row{bare, good, slow}, HalfRate: 500,
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
		"| 10.0 µs | 10.0 MiB / 12.0 MiB | 5.0 |", "| 25.0 µs | — | — |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
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
	req := []byte("GET /v1/models HTTP/1.1\r\nHost: " + m.Addr() + "\r\n\r\n")
	ic, err := OpenIdleRequest(context.Background(), m.Addr(), req, 50, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	if ic.Len() != 50 || ic.Alive() != 50 {
		t.Fatalf("opened %d alive %d", ic.Len(), ic.Alive())
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

// ReadCounts counts this process's own write(2) calls and context switches.
func TestReadCounts(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c0, err := ReadCounts(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond) // a voluntary context switch at least
	c1, err := ReadCounts(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if w := c1.Writes - c0.Writes; w < 100 {
		t.Fatalf("%d write calls counted for 100", w)
	}
	if c1.CtxSwitches <= c0.CtxSwitches || c1.Reads < c0.Reads {
		t.Fatalf("counts %+v then %+v", c0, c1)
	}
}
