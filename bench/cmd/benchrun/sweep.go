package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/harness"
	"github.com/switchyard/switchyard/bench/load"
	"github.com/switchyard/switchyard/bench/mock"
)

// halfFactor is how many times longer (and in how many times more slices)
// the 50% sweep step is measured than the others.
const halfFactor = 4

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
	// The upstream of the sweep: by default a mock served inside this
	// process, so the driver and the mock are one Go runtime on one core and
	// no second process competes with them for it (see bench/README.md).
	upstream, upstreamWhere := b.primary.Addr, "the mock upstream process (shared CPU with the driver process)"
	if b.o.sweepMock == "inprocess" {
		m, err := mock.Start("127.0.0.1:0", mock.Options{Name: "primary"})
		if err != nil {
			b.rep.Notes = append(b.rep.Notes, "Latency-vs-load sweep not run: in-process mock: "+firstLine(err.Error()))
			return
		}
		defer m.Close()
		upstream, upstreamWhere = m.Addr(), "a mock served inside the driver process (one Go runtime, GOMAXPROCS=1, on the driver's CPU; no mock process)"
	}
	b.rep.Method = append(b.rep.Method, fmt.Sprintf(
		"Latency vs offered load: open loop at 10/30/50/70/90%% of the bare proxy's closed-loop throughput (%.0f req/s), %v per step and proxy taken as %d slices alternating between the proxies (at 50%%, where p99 added is checked: %v as %d slices), up to %d connections; latency counts from the moment a request was due, so queueing is included. Upstream: %s.",
		sat, b.o.sweepStep, rounds, b.o.sweepStep*halfFactor, rounds*halfFactor, b.o.conns, upstreamWhere))

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
		p, err := b.startBare(upstream)
		return p, chatBody, err
	})
	start(seriesSy1, 0, func() (*proxy, []byte, error) {
		p, err := b.oneRuleURL("http://"+upstream+"/v1", false)
		return p, chatBody, err
	})
	start(seriesSy10k, b.rep.HalfRate, func() (*proxy, []byte, error) { return b.manyRulesURL("http://" + upstream + "/v1") })
	defer func() {
		for _, c := range cs {
			c.p.stop()
		}
	}()
	for _, c := range cs {
		// Warm the proxy (connection pools, heap) before the first step.
		_, _ = load.Run(b.ctx, load.Config{URL: c.url, Body: c.body, Headers: authHeader, Connections: b.o.conns, Duration: b.o.warmup})
	}
	// At each rate the proxies take turns in short slices (like compare),
	// so background load falls on all of them alike; a point merges its
	// slices.
	for _, rate := range rates {
		d, slices := b.o.sweepStep, rounds
		if rate == b.rep.HalfRate {
			// The step the p99 target is checked at: longer, in more
			// slices, so the per-slice spread shows the noise.
			d, slices = d*halfFactor, slices*halfFactor
		}
		merged := make([]*load.Result, len(cs))
		sliceP99 := make([][]time.Duration, len(cs))
		// The proxy's CPU time and the wall time around each slice's run,
		// summed per contestant; cpuBad marks a failed /proc reading.
		cpuSec := make([]float64, len(cs))
		wall := make([]time.Duration, len(cs))
		cpuBad := make([]bool, len(cs))
		for r := range slices {
			for j := range cs {
				k := (j + r) % len(cs)
				c := cs[k]
				if c.only > 0 && c.only != rate {
					continue
				}
				cpu0, err0 := harness.CPUSeconds(c.p.proc.PID())
				t0 := time.Now()
				res, err := load.Run(b.ctx, load.Config{
					URL: c.url, Body: c.body, Headers: authHeader, Connections: b.o.conns,
					Duration: d / time.Duration(slices), Rate: rate, Timeout: 30 * time.Second,
				})
				if err != nil {
					return
				}
				cpu1, err1 := harness.CPUSeconds(c.p.proc.PID())
				wall[k] += time.Since(t0)
				if err0 != nil || err1 != nil {
					cpuBad[k] = true
				}
				cpuSec[k] += cpu1 - cpu0
				if merged[k] == nil {
					merged[k] = &load.Result{Rate: rate}
				}
				merged[k].Merge(res)
				if res.Completed > 0 {
					sliceP99[k] = append(sliceP99[k], res.Latency.Quantile(0.99))
				}
			}
		}
		for k, c := range cs {
			res := merged[k]
			if res == nil {
				continue
			}
			pt := harness.Point{Offered: rate, Result: res, SliceP99: sliceP99[k]}
			if !cpuBad[k] {
				pt.CPUSeconds, pt.Wall = cpuSec[k], wall[k]
			}
			c.series.Points = append(c.series.Points, pt)
			ev := b.log.Info().Str("series", c.series.Name).Float64("offered", rate).Float64("achieved", math.Round(res.Throughput())).
				Dur("p50", res.Latency.Quantile(0.5)).Dur("p99", res.Latency.Quantile(0.99)).Int64("errors", res.Errors)
			if busy, ok := pt.Busy(); ok {
				ev = ev.Str("busy", fmt.Sprintf("%.0f%%", busy*100))
			}
			ev.Msg("sweep step")
		}
	}
	for _, c := range cs {
		b.rep.Sweeps = append(b.rep.Sweeps, c.series)
	}
}

// idle measures the memory of Switchyard, with the default server settings
// and with server.reduce_memory_usage: true, and for reference of the bare
// proxy, holding many idle keep-alive client connections.
func (b *bench) idle() {
	n := b.o.idleConns
	if n <= 0 || b.ctx.Err() != nil {
		return
	}
	b.rep.Method = append(b.rep.Method, fmt.Sprintf(
		"Idle connections: %d client connections each complete one request and stay open; RSS is VmRSS before opening them and 1 s after; while they are held, /proc/PID/status also gives RssAnon and RssFile (VmRSS = RssAnon + RssFile + RssShmem), and the process's /metrics gives go_memstats_stack_inuse_bytes, go_memstats_heap_inuse_bytes and go_goroutines. Two kinds of connection: idle after GET /healthz (a probe: Switchyard answers it itself, the bare proxy forwards it to the mock), and idle after a chat completion (a client that used the connection; proxied by both). Serving a proxied request grows a connection goroutine's stack to 8 KiB, and the Go runtime never shrinks it back while the goroutine waits for the next request, so the two kinds cost differently. Switchyard is measured with the default server settings (those of every throughput, CPU and latency row) and with server.reduce_memory_usage: true; the bare proxy with fasthttp's defaults and with ReduceMemoryUsage (-reduce-memory).", n))
	healthz := func(addr string) []byte {
		return []byte("GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: switchyard-bench\r\n\r\n")
	}
	chat := func(addr string) []byte {
		return harness.PostRequest(addr, chatPath, chatBody, authHeader[0][0]+": "+authHeader[0][1])
	}
	measure := func(name string, request func(addr string) []byte, start func() (*proxy, error)) {
		res := harness.Idle{Name: name, Wanted: n, Checked: strings.HasPrefix(name, "Switchyard")}
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
		ic, err := harness.OpenIdleRequest(b.ctx, p.addr, request(p.addr), n, 32)
		if err != nil {
			res.Err = err.Error() // ic still holds what was opened
		}
		defer ic.Close()
		res.Opened = ic.Len()
		time.Sleep(time.Second)
		if v, err := harness.MemStatuses(p.proc.PID(), "VmRSS", "RssAnon", "RssFile"); err == nil {
			res.RSSAfter, res.RSSAnon, res.RSSFile = v[0], v[1], v[2]
		} else {
			b.log.Warn().Err(err).Str("process", name).Msg("cannot read /proc/PID/status")
		}
		res.Sockets, _ = harness.CountSockets(p.proc.PID())
		// The Go runtime's view, after /proc so the scrape's own memory is
		// not in the RSS figures.
		if v, found, err := harness.ScrapeSamples(p.metricsURL,
			"go_memstats_stack_inuse_bytes", "go_memstats_heap_inuse_bytes", "go_goroutines"); err == nil {
			for i, dst := range []*int64{&res.StackInuse, &res.HeapInuse, &res.Goroutines} {
				if found[i] {
					*dst = int64(v[i])
				}
			}
		} else {
			b.log.Warn().Err(err).Str("process", name).Msg("cannot scrape /metrics while holding the connections")
		}
		res.Alive = ic.Alive()
		b.log.Info().Str("process", name).Int("opened", res.Opened).Int("alive", res.Alive).
			Str("rss_before", harness.FormatBytes(res.RSSBefore)).Str("rss_after", harness.FormatBytes(res.RSSAfter)).
			Str("rss_anon", harness.FormatBytes(res.RSSAnon)).Str("rss_file", harness.FormatBytes(res.RSSFile)).
			Str("stacks", harness.FormatBytes(res.StackInuse)).Str("heap_inuse", harness.FormatBytes(res.HeapInuse)).
			Int64("goroutines", res.Goroutines).Str("err", res.Err).Msg("idle connections")
	}
	for _, kind := range []struct {
		name    string
		request func(addr string) []byte
	}{{"after /healthz", healthz}, {"after a chat completion", chat}} {
		measure("Switchyard, 1 rule (default), "+kind.name, kind.request, func() (*proxy, error) { return b.oneRule(b.primary) })
		measure("Switchyard, 1 rule, reduce_memory_usage: true, "+kind.name, kind.request, func() (*proxy, error) { return b.oneRuleWith(b.primary, true) })
	}
	measure("bare proxy, after /healthz (proxied)", healthz, func() (*proxy, error) { return b.startBare(b.primary.Addr) })
	measure("bare proxy, -reduce-memory, after /healthz (proxied)", healthz, func() (*proxy, error) {
		return b.startBare(b.primary.Addr, "-reduce-memory")
	})
}
