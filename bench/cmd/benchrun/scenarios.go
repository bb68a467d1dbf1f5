package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/bench/harness"
	"github.com/switchyard/switchyard/bench/load"
	"github.com/switchyard/switchyard/bench/mock"
)

// The requests every scenario sends. The client's key is never forwarded
// by Switchyard (it sends the target's own); the bare proxy forwards it.
var (
	chatBody   = []byte(`{"model":"bench-model","messages":[{"role":"user","content":"Say hello"}]}`)
	streamBody = []byte(`{"model":"bench-model","stream":true,"messages":[{"role":"user","content":"Say hello"}]}`)
	authHeader = [][2]string{{"Authorization", "Bearer bench-client-key"}}
)

const chatPath = "/v1/chat/completions"

// Row names, also used as keys between the scenarios and the sweep.
const (
	rowDirect      = "direct to mock"
	rowBare        = "bare proxy"
	rowSy1         = "Switchyard, 1 rule"
	rowSy10k       = "Switchyard, 10,000 rules"
	rowFailEvery   = "Switchyard failover, primary 503 every request"
	rowFailOpen    = "Switchyard failover, primary circuit open"
	rowDirectSSE   = "direct to mock (SSE)"
	rowBareSSE     = "bare proxy (SSE)"
	rowSySSE       = "Switchyard, 1 rule (SSE)"
	seriesBare     = "bare proxy"
	seriesSy1      = "Switchyard 1 rule"
	seriesSy10k    = "Switchyard 10k rules"
	upstreamAPIKey = "bench-upstream-key"
)

// bench holds the state of one benchmark run. Not safe for concurrent use.
type bench struct {
	o   options
	log zerolog.Logger
	tmp string
	ctx context.Context

	mockBin, bareBin, syBin string
	syErr                   string // why Switchyard scenarios are skipped
	fileLimit               uint64
	proxyCPUs, sideCPUs     []int

	primary, secondary, streamer *harness.Proc
	respBytes                    int

	rep  harness.Report
	rows map[string]*harness.Row
}

func (b *bench) startMocks() error {
	start := func(name string, extra ...string) (*harness.Proc, error) {
		args := append([]string{"-listen", "127.0.0.1:0", "-name", name}, extra...)
		return harness.Start(b.ctx, b.mockBin, args, harness.StartOptions{
			Name: "mock " + name, CPUs: b.sideCPUs, Env: []string{"GOMAXPROCS=1"}, WaitListening: true,
		})
	}
	var err error
	if b.primary, err = start("primary"); err != nil {
		return err
	}
	if b.secondary, err = start("secondary"); err != nil {
		return err
	}
	if b.streamer, err = start("stream", "-stream-events", strconv.Itoa(b.o.streamEvents),
		"-stream-interval", b.o.streamInterval.String()); err != nil {
		return err
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + b.primary.Addr + chatPath)
	req.Header.SetMethod("POST")
	req.SetBody(chatBody)
	if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil || resp.StatusCode() != 200 {
		return fmt.Errorf("mock does not answer: %v (status %d)", err, resp.StatusCode())
	}
	b.respBytes = len(resp.Body())
	return nil
}

func (b *bench) stopMocks() {
	for _, p := range []*harness.Proc{b.primary, b.secondary, b.streamer} {
		if p != nil {
			p.Stop()
		}
	}
}

// proxy is a started proxy under test.
type proxy struct {
	proc       *harness.Proc
	addr       string
	metricsURL string
}

func (p *proxy) stop() {
	if p != nil && p.proc != nil {
		p.proc.Stop()
	}
}

func (b *bench) startBare(upstream string) (*proxy, error) {
	maddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p, err := harness.Start(b.ctx, b.bareBin, []string{"-listen", "127.0.0.1:0", "-upstream", upstream, "-metrics", maddr},
		harness.StartOptions{Name: "bareproxy", CPUs: b.proxyCPUs, Env: []string{"GOMAXPROCS=1"}, WaitListening: true})
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(b.ctx, "http://"+maddr+"/metrics", p, 10*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return &proxy{proc: p, addr: p.Addr, metricsURL: "http://" + maddr + "/metrics"}, nil
}

// gwTarget is one target of a generated Switchyard config.
type gwTarget struct {
	name, baseURL string
	// failureThreshold overrides the breaker's (0: default).
	failureThreshold int
}

// startSwitchyard writes a config routing model-named rules and starts the
// gateway on a free port. rules are (model, chain) pairs in order.
func (b *bench) startSwitchyard(name string, targets []gwTarget, rules [][2]string) (*proxy, error) {
	if b.syErr != "" {
		return nil, fmt.Errorf("%s", b.syErr)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	var y strings.Builder
	fmt.Fprintf(&y, "server:\n  listen: %s\nlog:\n  level: warn\n  access_log: false\nstrategy:\n  mode: conditional\n  conditions:\n", addr)
	for _, r := range rules {
		chain := strings.Split(r[1], ",")
		if len(chain) == 1 {
			fmt.Fprintf(&y, "    - key: model\n      value: %s\n      target_key: %s\n", r[0], chain[0])
		} else {
			fmt.Fprintf(&y, "    - key: model\n      value: %s\n      target_keys: [%s]\n", r[0], strings.Join(chain, ", "))
		}
	}
	y.WriteString("targets:\n")
	for _, t := range targets {
		fmt.Fprintf(&y, "  - virtual_key: %s\n    provider: openai\n    base_url: %s\n    api_key: %s\n", t.name, t.baseURL, upstreamAPIKey)
		if t.failureThreshold > 0 {
			fmt.Fprintf(&y, "    circuit_breaker:\n      failure_threshold: %d\n", t.failureThreshold)
		}
	}
	file := filepath.Join(b.tmp, strings.NewReplacer(" ", "-", ",", "").Replace(name)+".yaml")
	if err := os.WriteFile(file, []byte(y.String()), 0o600); err != nil {
		return nil, err
	}
	p, err := harness.Start(b.ctx, b.syBin, []string{"serve", "-config", file, "-listen", addr},
		harness.StartOptions{Name: "switchyard", CPUs: b.proxyCPUs, Env: []string{"GOMAXPROCS=1"}})
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(b.ctx, "http://"+addr+"/readyz", p, 60*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return &proxy{proc: p, addr: addr, metricsURL: "http://" + addr + "/metrics"}, nil
}

func (b *bench) mockURL(p *harness.Proc) string { return "http://" + p.Addr + "/v1" }

func (b *bench) oneRule(upstream *harness.Proc) (*proxy, error) {
	return b.startSwitchyard("1-rule", []gwTarget{{name: "primary", baseURL: b.mockURL(upstream)}},
		[][2]string{{"bench-model", "primary"}})
}

func (b *bench) manyRules() (*proxy, []byte, error) {
	rules := make([][2]string, b.o.rules)
	for i := range rules {
		rules[i] = [2]string{fmt.Sprintf("model-%05d", i), "primary"}
	}
	last := rules[len(rules)-1][0]
	body := []byte(strings.Replace(string(chatBody), "bench-model", last, 1))
	p, err := b.startSwitchyard("many-rules", []gwTarget{{name: "primary", baseURL: b.mockURL(b.primary)}}, rules)
	return p, body, err
}

func (b *bench) failover(threshold int) (*proxy, error) {
	return b.startSwitchyard(fmt.Sprintf("failover-%d", threshold), []gwTarget{
		{name: "primary", baseURL: b.mockURL(b.primary), failureThreshold: threshold},
		{name: "secondary", baseURL: b.mockURL(b.secondary)},
	}, [][2]string{{"bench-model", "primary,secondary"}})
}

// scenarios measures every row of the request and streaming tables.
func (b *bench) scenarios() {
	b.rows = map[string]*harness.Row{}
	add := func(name string, stream bool, direct, bare string) *harness.Row {
		r := &harness.Row{Name: name, Stream: stream, CPUSeconds: -1, Mallocs: -1}
		if direct != "" {
			r.Direct = b.rows[direct]
		}
		if bare != "" {
			r.Bare = b.rows[bare]
		}
		b.rows[name] = r
		b.rep.Rows = append(b.rep.Rows, r)
		return r
	}
	url := func(addr string) string { return "http://" + addr + chatPath }

	b.measure(add(rowDirect, false, "", ""), url(b.primary.Addr), chatBody, nil, nil)
	b.withProxy(add(rowBare, false, rowDirect, ""), func() (*proxy, error) { return b.startBare(b.primary.Addr) }, chatBody, nil)
	b.withProxy(add(rowSy1, false, rowDirect, rowBare), func() (*proxy, error) { return b.oneRule(b.primary) }, chatBody, nil)
	var body10k []byte
	b.withProxy(add(rowSy10k, false, rowDirect, rowBare), func() (*proxy, error) {
		p, body, err := b.manyRules()
		body10k = body
		return p, err
	}, nil, &body10k)

	// Failover: the primary mock fails every request from here on.
	if err := mockCall(b.primary.Addr, "POST", "/_mock/fail?status=503"); err != nil {
		b.log.Warn().Err(err).Msg("cannot make the primary mock fail")
	}
	for _, fo := range []struct {
		name      string
		threshold int
	}{{rowFailEvery, 1_000_000_000}, {rowFailOpen, 0}} {
		row := add(fo.name, false, rowDirect, "")
		before, _ := mockStats(b.primary.Addr)
		b.withProxy(row, func() (*proxy, error) { return b.failover(fo.threshold) }, chatBody, nil)
		after, _ := mockStats(b.primary.Addr)
		if row.Result != nil {
			row.Note = fmt.Sprintf("the primary mock answered 503 to %d requests during warm-up and run, the secondary served %d in the measured run",
				after.Failed-before.Failed, row.Result.Completed)
		}
	}
	if err := mockCall(b.primary.Addr, "POST", "/_mock/reset"); err != nil {
		b.log.Warn().Err(err).Msg("cannot reset the primary mock")
	}

	b.measure(add(rowDirectSSE, true, "", ""), url(b.streamer.Addr), streamBody, nil, nil)
	b.withProxy(add(rowBareSSE, true, rowDirectSSE, ""), func() (*proxy, error) { return b.startBare(b.streamer.Addr) }, streamBody, nil)
	b.withProxy(add(rowSySSE, true, rowDirectSSE, rowBareSSE), func() (*proxy, error) { return b.oneRule(b.streamer) }, streamBody, nil)
}

// withProxy starts a proxy, measures row through it and stops it. body may
// be given late through bodyp (set by start).
func (b *bench) withProxy(row *harness.Row, start func() (*proxy, error), body []byte, bodyp *[]byte) {
	if b.ctx.Err() != nil {
		row.Skipped = "interrupted"
		return
	}
	p, err := start()
	if err != nil {
		row.Skipped = firstLine(err.Error())
		b.log.Warn().Err(err).Str("scenario", row.Name).Msg("scenario skipped")
		return
	}
	defer p.stop()
	if bodyp != nil {
		body = *bodyp
	}
	b.measure(row, "http://"+p.addr+chatPath, body, p, nil)
	if row.Result != nil {
		if hwm, err := harness.MemStatus(p.proc.PID(), "VmHWM"); err == nil {
			row.PeakRSS = hwm
		}
	}
}

// measure warms up then measures row against url. With a proxy it reads
// the proxy's CPU time and allocation counter around the measured run.
func (b *bench) measure(row *harness.Row, url string, body []byte, p *proxy, cfgEdit func(*load.Config)) {
	if b.ctx.Err() != nil {
		row.Skipped = "interrupted"
		return
	}
	cfg := load.Config{
		URL: url, Body: body, Headers: authHeader, Connections: b.o.conns,
		Duration: b.o.warmup, Stream: row.Stream, Timeout: 30 * time.Second,
	}
	if cfgEdit != nil {
		cfgEdit(&cfg)
	}
	warm, err := load.Run(b.ctx, cfg)
	if err != nil || warm.Completed == 0 {
		row.Skipped = "warm-up failed"
		if warm != nil && warm.FirstError != "" {
			row.Skipped += ": " + truncate(warm.FirstError, 120)
		}
		if p != nil {
			if tail := p.proc.Log(); tail != "" {
				b.log.Warn().Str("scenario", row.Name).Str("log", lastLines(tail, 5)).Msg("proxy output")
			}
		}
		b.log.Warn().Str("scenario", row.Name).Str("why", row.Skipped).Msg("scenario skipped")
		return
	}
	var cpu0, m0 float64
	haveMallocs := false
	if p != nil {
		cpu0, _ = harness.CPUSeconds(p.proc.PID())
		if v, ok, err := harness.ScrapeCounter(p.metricsURL, "go_memstats_mallocs_total"); err == nil && ok {
			m0, haveMallocs = v, true
		}
	}
	cfg.Duration = b.o.duration
	res, err := load.Run(b.ctx, cfg)
	if err != nil {
		row.Skipped = "interrupted"
		return
	}
	row.Result = res
	if p != nil {
		if cpu1, err := harness.CPUSeconds(p.proc.PID()); err == nil {
			row.CPUSeconds = cpu1 - cpu0
		}
		if v, ok, err := harness.ScrapeCounter(p.metricsURL, "go_memstats_mallocs_total"); err == nil && ok && haveMallocs {
			row.Mallocs = v - m0
		}
	}
	ev := b.log.Info().Str("scenario", row.Name).Float64("req_per_s", math.Round(res.Throughput())).
		Dur("p50", res.Latency.Quantile(0.5)).Dur("p99", res.Latency.Quantile(0.99)).Int64("errors", res.Errors)
	if d, ok := row.CPUPerRequest(); ok {
		ev = ev.Dur("cpu_per_req", d)
	}
	if res.FirstEvent != nil {
		ev = ev.Dur("first_event_p50", res.FirstEvent.Quantile(0.5))
	}
	ev.Msg("measured")
}

// sweep measures latency against offered open-loop load for the bare proxy
// and Switchyard at fractions of the bare proxy's saturation throughput.
func (b *bench) sweep() {
	bare := b.rows[rowBare]
	if bare == nil || bare.Result == nil || bare.Result.Throughput() == 0 || b.ctx.Err() != nil {
		b.rep.Notes = append(b.rep.Notes, "Latency-vs-load sweep not run: the bare proxy scenario did not run.")
		return
	}
	sat := bare.Result.Throughput()
	var rates []float64
	for _, f := range []float64{0.1, 0.3, 0.5, 0.7, 0.9} {
		rates = append(rates, math.Max(10, math.Round(sat*f/10)*10))
	}
	b.rep.HalfRate = rates[2]
	b.rep.SweepBaseline = seriesBare
	b.rep.SweepFor = map[string]string{rowSy1: seriesSy1, rowSy10k: seriesSy10k}
	b.rep.Method = append(b.rep.Method, fmt.Sprintf(
		"Latency vs offered load: open loop at 10/30/50/70/90%% of the bare proxy's closed-loop throughput (%.0f req/s), %v per step, up to %d connections; latency counts from the moment a request was due, so queueing is included.",
		sat, b.o.sweepStep, b.o.conns))

	run := func(series string, start func() (*proxy, []byte, error), rates []float64) {
		s := harness.Series{Name: series}
		p, body, err := start()
		if err != nil {
			b.rep.Notes = append(b.rep.Notes, fmt.Sprintf("Sweep %s not run: %s", series, firstLine(err.Error())))
			return
		}
		defer p.stop()
		url := "http://" + p.addr + chatPath
		// Warm the proxy (connection pools, heap) before the first step.
		_, _ = load.Run(b.ctx, load.Config{URL: url, Body: body, Headers: authHeader, Connections: b.o.conns, Duration: b.o.warmup})
		for _, rate := range rates {
			res, err := load.Run(b.ctx, load.Config{
				URL: url, Body: body, Headers: authHeader, Connections: b.o.conns,
				Duration: b.o.sweepStep, Rate: rate, Timeout: 30 * time.Second,
			})
			if err != nil {
				return
			}
			s.Points = append(s.Points, harness.Point{Offered: rate, Result: res})
			b.log.Info().Str("series", series).Float64("offered", rate).Float64("achieved", math.Round(res.Throughput())).
				Dur("p50", res.Latency.Quantile(0.5)).Dur("p99", res.Latency.Quantile(0.99)).Int64("errors", res.Errors).Msg("sweep step")
		}
		b.rep.Sweeps = append(b.rep.Sweeps, s)
	}
	run(seriesBare, func() (*proxy, []byte, error) {
		p, err := b.startBare(b.primary.Addr)
		return p, chatBody, err
	}, rates)
	run(seriesSy1, func() (*proxy, []byte, error) {
		p, err := b.oneRule(b.primary)
		return p, chatBody, err
	}, rates)
	run(seriesSy10k, b.manyRules, rates[2:3])
}

// idle measures the memory of Switchyard (and, for reference, the bare
// proxy) holding many idle keep-alive client connections.
func (b *bench) idle() {
	n := b.o.idleConns
	if n <= 0 || b.ctx.Err() != nil {
		return
	}
	b.rep.Method = append(b.rep.Method, fmt.Sprintf(
		"Idle connections: %d client connections each complete one GET /healthz (forwarded to the mock by the bare proxy) and stay open; RSS is VmRSS before opening them and 1 s after.", n))
	measure := func(name string, start func() (*proxy, error)) {
		res := harness.Idle{Name: name, Wanted: n}
		defer func() { b.rep.Idle = append(b.rep.Idle, res) }()
		p, err := start()
		if err != nil {
			res.Err = firstLine(err.Error())
			return
		}
		defer p.stop()
		// A few requests so pools and buffers exist before the baseline.
		_, _ = load.Run(b.ctx, load.Config{URL: "http://" + p.addr + chatPath, Body: chatBody, Headers: authHeader, Connections: 8, Requests: 2000})
		time.Sleep(200 * time.Millisecond)
		res.RSSBefore, _ = harness.MemStatus(p.proc.PID(), "VmRSS")
		ic, err := harness.OpenIdle(b.ctx, p.addr, "/healthz", n, 32)
		if err != nil {
			res.Err = err.Error() // ic still holds what was opened
		}
		defer ic.Close()
		res.Opened = ic.Len()
		time.Sleep(time.Second)
		res.RSSAfter, _ = harness.MemStatus(p.proc.PID(), "VmRSS")
		res.Sockets, _ = harness.CountSockets(p.proc.PID())
		res.Alive = ic.Alive()
		b.log.Info().Str("process", name).Int("opened", res.Opened).Int("alive", res.Alive).
			Str("rss_before", harness.FormatBytes(res.RSSBefore)).Str("rss_after", harness.FormatBytes(res.RSSAfter)).
			Str("err", res.Err).Msg("idle connections")
	}
	measure("Switchyard, 1 rule", func() (*proxy, error) { return b.oneRule(b.primary) })
	measure("bare proxy", func() (*proxy, error) { return b.startBare(b.primary.Addr) })
}

// freeAddr returns a 127.0.0.1 address with a port free right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitHTTP polls url until it answers 200, p exits, or timeout.
func waitHTTP(ctx context.Context, url string, p *harness.Proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		status, _, err := fasthttp.GetTimeout(nil, url, time.Second)
		if err == nil && status == 200 {
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("%s exited: %s", p.Name, lastLines(p.Log(), 5))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not ready at %s after %v (status %d, %v): %s", p.Name, url, timeout, status, err, lastLines(p.Log(), 5))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mockCall(addr, method, path string) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + path)
	req.Header.SetMethod(method)
	if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil {
		return err
	}
	if resp.StatusCode() != 200 {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode(), resp.Body())
	}
	return nil
}

func mockStats(addr string) (mock.Stats, error) {
	var st mock.Stats
	status, body, err := fasthttp.GetTimeout(nil, "http://"+addr+"/_mock/stats", 5*time.Second)
	if err != nil {
		return st, err
	}
	if status != 200 {
		return st, fmt.Errorf("stats: status %d", status)
	}
	return st, json.Unmarshal(body, &st)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
