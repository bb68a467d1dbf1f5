package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/bench/harness"
	"github.com/switchyard/switchyard/bench/load"
)

// The requests every scenario sends. The client's key is never forwarded
// by Switchyard (it sends the target's own); the bare proxy forwards it.
var (
	chatBody   = []byte(`{"model":"bench-model","messages":[{"role":"user","content":"Say hello"}]}`)
	streamBody = []byte(`{"model":"bench-model","stream":true,"messages":[{"role":"user","content":"Say hello"}]}`)
	authHeader = [][2]string{{"Authorization", "Bearer " + benchClientKey}}
)

const chatPath = "/v1/chat/completions"

// Row names, also used as keys between the scenarios and the sweep.
const (
	rowDirect      = "direct to mock"
	rowBare        = "bare proxy"
	rowSy1         = "Switchyard, 1 rule"
	rowSy10k       = "Switchyard, 10,000 rules"
	rowSyKeys      = "Switchyard, 1 rule, client keys"
	rowFailEvery   = "Switchyard failover, primary 503 every request"
	rowFailOpen    = "Switchyard failover, primary circuit open"
	rowDirectSSE   = "direct to mock (SSE)"
	rowBareSSE     = "bare proxy (SSE)"
	rowSySSE       = "Switchyard, 1 rule (SSE)"
	seriesBare     = "bare proxy"
	seriesSy1      = "Switchyard 1 rule"
	seriesSy10k    = "Switchyard 10k rules"
	upstreamAPIKey = "bench-upstream-key"
	benchClientKey = "bench-client-key"
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
	// allCPUs is every CPU the driver was allowed before it pinned itself:
	// an unpinned proxy gets them back (a child inherits its parent's
	// affinity, and the driver's is then CPU 1 alone).
	allCPUs []int

	primary, secondary, streamer *harness.Proc
	respBytes                    int

	rep  harness.Report
	rows map[string]*harness.Row
	// unpinned starts proxies without affinity and at the default
	// GOMAXPROCS (see placeCPUs).
	unpinned bool
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
	// side is another counter read the same way (e.g. Redis commands),
	// summed in sided.
	side  func() int64
	sided int64
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
	group := []*contender{
		direct(add(rowDirect, false, "", ""), b.primary, chatBody),
		b.viaProxy(add(rowBare, false, rowDirect, ""), chatBody, func() (*proxy, error) { return b.startBare(b.primary.Addr) }),
		b.viaProxy(add(rowSy1, false, rowDirect, rowBare), chatBody, func() (*proxy, error) { return b.oneRule(b.primary) }),
		b.viaProxy(add(rowSyKeys, false, rowDirect, rowBare), chatBody, func() (*proxy, error) { return b.oneRuleKeys(b.primary) }),
		b.viaProxy(add(rowSy10k, false, rowDirect, rowBare), nil, func() (*proxy, error) {
			p, body, err := b.manyRulesURL(b.mockURL(b.primary))
			body10k = body
			return p, err
		}),
	}
	countUpstream(group, b.primary.Addr)
	b.compare(group, &body10k)
	checkUpstream(group)

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
	group = []*contender{
		direct(add(rowDirectSSE, true, "", ""), b.streamer, streamBody),
		b.viaProxy(add(rowBareSSE, true, rowDirectSSE, ""), streamBody, func() (*proxy, error) { return b.startBare(b.streamer.Addr) }),
		b.viaProxy(add(rowSySSE, true, rowDirectSSE, rowBareSSE), streamBody, func() (*proxy, error) { return b.oneRule(b.streamer) }),
	}
	countUpstream(group, b.streamer.Addr)
	b.compare(group, nil)
	checkUpstream(group)

	b.featureRows()
	b.bodySizes()
	b.unpinnedRows()
	b.longStreams()
}

// countUpstream makes each contender count the requests the mock at addr
// receives during its slices.
func countUpstream(cs []*contender, addr string) {
	probe := func() int64 {
		st, err := mockStats(addr)
		if err != nil {
			return -1 << 40 // poisons the sum: reported as a mismatch
		}
		return st.Requests
	}
	for _, c := range cs {
		if c != nil {
			c.probe = probe
		}
	}
}

// checkUpstream notes every row whose requests did not each reach the mock
// exactly once: a proxy answering by itself, or retrying, would show here.
func checkUpstream(cs []*contender) {
	for _, c := range cs {
		if c == nil || c.row.Result == nil {
			continue
		}
		sent := c.row.Result.Completed + c.row.Result.Errors
		if c.probed != sent {
			c.row.Note = fmt.Sprintf("the mock received %d requests for the %d sent in the measured slices", c.probed, sent)
		}
	}
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
const rounds = 5

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
	var counts0 harness.Counts
	var countsOK bool
	if c.proxy != nil {
		counts0, countsOK = readCounts(c.proxy.proc.PID())
	}
	var p0, s0 int64
	if c.probe != nil {
		p0 = c.probe()
	}
	if c.side != nil {
		s0 = c.side()
	}
	res, err := load.Run(b.ctx, b.loadConfig(c, d))
	if err != nil {
		return
	}
	if c.probe != nil {
		c.probed += c.probe() - p0
	}
	if c.side != nil {
		c.sided += c.side() - s0
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
	if counts1, ok := readCounts(c.proxy.proc.PID()); ok && countsOK {
		row.Counts, row.CountsOK = harness.Counts{
			Reads:       row.Counts.Reads + counts1.Reads - counts0.Reads,
			Writes:      row.Counts.Writes + counts1.Writes - counts0.Writes,
			CtxSwitches: row.Counts.CtxSwitches + counts1.CtxSwitches - counts0.CtxSwitches,
		}, row.Result.Completed > 0
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

func readCounts(pid int) (harness.Counts, bool) {
	c, err := harness.ReadCounts(pid)
	return c, err == nil
}
