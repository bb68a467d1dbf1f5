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
	yaml := gatewayYAML(addr, targets, rules)
	file := filepath.Join(b.tmp, strings.NewReplacer(" ", "-", ",", "").Replace(name)+".yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
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

// gatewayYAML is a Switchyard config listening on addr with targets and
// model rules ((model, comma-separated chain) pairs, in order). Access log
// off and level warn: the bare proxy logs nothing either.
func gatewayYAML(addr string, targets []gwTarget, rules [][2]string) string {
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
	return y.String()
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

// contender is one row of an interleaved comparison.
type contender struct {
	row   *harness.Row
	url   string
	body  []byte
	proxy *proxy // nil: straight to the mock
	// probe, when set, is read around each measured slice; probed sums the
	// differences (e.g. a mock's failure count during this row's slices).
	probe  func() int64
	probed int64
}

// scenarios measures every row of the request and streaming tables, in
// three groups whose members are measured in alternation (see compare).
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
	direct := func(row *harness.Row, mock *harness.Proc, body []byte) *contender {
		return &contender{row: row, url: "http://" + mock.Addr + chatPath, body: body}
	}

	// Request/response.
	var body10k []byte
	b.compare([]*contender{
		direct(add(rowDirect, false, "", ""), b.primary, chatBody),
		b.viaProxy(add(rowBare, false, rowDirect, ""), chatBody, func() (*proxy, error) { return b.startBare(b.primary.Addr) }),
		b.viaProxy(add(rowSy1, false, rowDirect, rowBare), chatBody, func() (*proxy, error) { return b.oneRule(b.primary) }),
		b.viaProxy(add(rowSy10k, false, rowDirect, rowBare), nil, func() (*proxy, error) {
			p, body, err := b.manyRules()
			body10k = body
			return p, err
		}),
	}, &body10k)

	// Failover: the primary mock fails every request from here on.
	if err := mockCall(b.primary.Addr, "POST", "/_mock/fail?status=503"); err != nil {
		b.log.Warn().Err(err).Msg("cannot make the primary mock fail")
	}
	primaryFailures := func() int64 {
		st, err := mockStats(b.primary.Addr)
		if err != nil {
			return 0
		}
		return st.Failed
	}
	every := b.viaProxy(add(rowFailEvery, false, rowDirect, ""), chatBody, func() (*proxy, error) { return b.failover(1_000_000_000) })
	open := b.viaProxy(add(rowFailOpen, false, rowDirect, ""), chatBody, func() (*proxy, error) { return b.failover(0) })
	for _, c := range []*contender{every, open} {
		if c != nil {
			c.probe = primaryFailures
		}
	}
	b.compare([]*contender{every, open}, nil)
	for _, c := range []*contender{every, open} {
		if c != nil && c.row.Result != nil && c.row.Result.Completed > 0 {
			c.row.Note = fmt.Sprintf("during its measured slices the primary answered 503 %d times for %d requests served (%.2f per request)",
				c.probed, c.row.Result.Completed, float64(c.probed)/float64(c.row.Result.Completed))
		}
	}
	if err := mockCall(b.primary.Addr, "POST", "/_mock/reset"); err != nil {
		b.log.Warn().Err(err).Msg("cannot reset the primary mock")
	}

	// Streaming.
	b.compare([]*contender{
		direct(add(rowDirectSSE, true, "", ""), b.streamer, streamBody),
		b.viaProxy(add(rowBareSSE, true, rowDirectSSE, ""), streamBody, func() (*proxy, error) { return b.startBare(b.streamer.Addr) }),
		b.viaProxy(add(rowSySSE, true, rowDirectSSE, rowBareSSE), streamBody, func() (*proxy, error) { return b.oneRule(b.streamer) }),
	}, nil)
}

// viaProxy starts a proxy for row; nil (row skipped) if it does not start.
func (b *bench) viaProxy(row *harness.Row, body []byte, start func() (*proxy, error)) *contender {
	if b.ctx.Err() != nil {
		row.Skipped = "interrupted"
		return nil
	}
	p, err := start()
	if err != nil {
		row.Skipped = firstLine(err.Error())
		b.log.Warn().Err(err).Str("scenario", row.Name).Msg("scenario skipped")
		return nil
	}
	return &contender{row: row, url: "http://" + p.addr + chatPath, body: body, proxy: p}
}

// rounds is how many slices each contender's measured time is cut into.
const rounds = 3

// compare warms every contender up, then measures them in alternation:
// rounds passes, each giving every contender Duration/rounds, the starting
// contender rotating. Background load on the machine then falls on all of
// them alike instead of on whichever ran during a burst. A contender's row
// gets the merged result, CPU time and allocations of its slices; proxies
// are stopped at the end. bodyp, if non-nil, fills in a nil body (set by a
// proxy start).
func (b *bench) compare(all []*contender, bodyp *[]byte) {
	var cs []*contender
	for _, c := range all {
		if c == nil {
			continue
		}
		if c.body == nil && bodyp != nil {
			c.body = *bodyp
		}
		if c.proxy != nil {
			defer c.proxy.stop()
		}
		cs = append(cs, c)
	}
	// Warm up each, dropping those that fail.
	live := cs[:0]
	for _, c := range cs {
		if b.warm(c) {
			live = append(live, c)
		}
	}
	slice := b.o.duration / rounds
	for r := range rounds {
		for i := range live {
			c := live[(i+r)%len(live)]
			if b.ctx.Err() != nil {
				c.row.Skipped = "interrupted"
				continue
			}
			b.measureSlice(c, slice)
		}
	}
	for _, c := range live {
		if c.proxy != nil && c.row.Result != nil {
			if hwm, err := harness.MemStatus(c.proxy.proc.PID(), "VmHWM"); err == nil {
				c.row.PeakRSS = hwm
			}
			if rss, err := harness.MemStatus(c.proxy.proc.PID(), "VmRSS"); err == nil {
				c.row.RSS = rss
			}
		}
		b.logRow(c.row)
	}
}

func (b *bench) loadConfig(c *contender, d time.Duration) load.Config {
	return load.Config{
		URL: c.url, Body: c.body, Headers: authHeader, Connections: b.o.conns,
		Duration: d, Stream: c.row.Stream, Timeout: 30 * time.Second,
	}
}

// warm runs the unmeasured warm-up; false (row skipped) when nothing works.
func (b *bench) warm(c *contender) bool {
	res, err := load.Run(b.ctx, b.loadConfig(c, b.o.warmup))
	if err == nil && res.Completed > 0 {
		return true
	}
	c.row.Skipped = "warm-up failed"
	if res != nil && res.FirstError != "" {
		c.row.Skipped += ": " + truncate(res.FirstError, 120)
	}
	if c.proxy != nil {
		if tail := c.proxy.proc.Log(); tail != "" {
			b.log.Warn().Str("scenario", c.row.Name).Str("log", lastLines(tail, 5)).Msg("proxy output")
		}
	}
	b.log.Warn().Str("scenario", c.row.Name).Str("why", c.row.Skipped).Msg("scenario skipped")
	return false
}

// measureSlice measures one slice of c and adds it to c.row, with the
// proxy's CPU time and allocation counter read around it.
func (b *bench) measureSlice(c *contender, d time.Duration) {
	row := c.row
	var cpu0, m0 float64
	var cpuOK, mOK bool
	if c.proxy != nil {
		v, err := harness.CPUSeconds(c.proxy.proc.PID())
		cpu0, cpuOK = v, err == nil
		if v, ok, err := harness.ScrapeCounter(c.proxy.metricsURL, "go_memstats_mallocs_total"); err == nil && ok {
			m0, mOK = v, true
		}
	}
	var p0 int64
	if c.probe != nil {
		p0 = c.probe()
	}
	res, err := load.Run(b.ctx, b.loadConfig(c, d))
	if err != nil {
		return
	}
	if c.probe != nil {
		c.probed += c.probe() - p0
	}
	if row.Result == nil {
		row.Result = &load.Result{}
	}
	row.Result.Merge(res)
	if c.proxy == nil {
		return
	}
	if v, err := harness.CPUSeconds(c.proxy.proc.PID()); err == nil && cpuOK {
		row.CPUSeconds = max(row.CPUSeconds, 0) + v - cpu0
	}
	if v, ok, err := harness.ScrapeCounter(c.proxy.metricsURL, "go_memstats_mallocs_total"); err == nil && ok && mOK {
		row.Mallocs = max(row.Mallocs, 0) + v - m0
	}
}

func (b *bench) logRow(row *harness.Row) {
	res := row.Result
	if res == nil {
		return
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
		"Latency vs offered load: open loop at 10/30/50/70/90%% of the bare proxy's closed-loop throughput (%.0f req/s), %v per step and proxy (twice that at 50%%, where p99 added is checked), proxies alternating at each step, up to %d connections; latency counts from the moment a request was due, so queueing is included.",
		sat, b.o.sweepStep, b.o.conns))

	type contestant struct {
		series harness.Series
		url    string
		body   []byte
		p      *proxy
		only   float64 // >0: measured at this rate only
	}
	var cs []*contestant
	start := func(series string, only float64, start func() (*proxy, []byte, error)) {
		p, body, err := start()
		if err != nil {
			b.rep.Notes = append(b.rep.Notes, fmt.Sprintf("Sweep %s not run: %s", series, firstLine(err.Error())))
			return
		}
		cs = append(cs, &contestant{series: harness.Series{Name: series}, url: "http://" + p.addr + chatPath, body: body, p: p, only: only})
	}
	start(seriesBare, 0, func() (*proxy, []byte, error) {
		p, err := b.startBare(b.primary.Addr)
		return p, chatBody, err
	})
	start(seriesSy1, 0, func() (*proxy, []byte, error) {
		p, err := b.oneRule(b.primary)
		return p, chatBody, err
	})
	start(seriesSy10k, b.rep.HalfRate, b.manyRules)
	defer func() {
		for _, c := range cs {
			c.p.stop()
		}
	}()
	for _, c := range cs {
		// Warm the proxy (connection pools, heap) before the first step.
		_, _ = load.Run(b.ctx, load.Config{URL: c.url, Body: c.body, Headers: authHeader, Connections: b.o.conns, Duration: b.o.warmup})
	}
	// Steps alternate between the proxies at each rate, so background load
	// falls on all of them alike.
	for i, rate := range rates {
		for j := range cs {
			c := cs[(i+j)%len(cs)]
			if c.only > 0 && c.only != rate {
				continue
			}
			d := b.o.sweepStep
			if rate == b.rep.HalfRate {
				d *= 2 // the step the p99 target is checked at
			}
			res, err := load.Run(b.ctx, load.Config{
				URL: c.url, Body: c.body, Headers: authHeader, Connections: b.o.conns,
				Duration: d, Rate: rate, Timeout: 30 * time.Second,
			})
			if err != nil {
				return
			}
			c.series.Points = append(c.series.Points, harness.Point{Offered: rate, Result: res})
			b.log.Info().Str("series", c.series.Name).Float64("offered", rate).Float64("achieved", math.Round(res.Throughput())).
				Dur("p50", res.Latency.Quantile(0.5)).Dur("p99", res.Latency.Quantile(0.99)).Int64("errors", res.Errors).Msg("sweep step")
		}
	}
	for _, c := range cs {
		b.rep.Sweeps = append(b.rep.Sweeps, c.series)
	}
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
