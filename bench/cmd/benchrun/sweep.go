package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/harness"
	"github.com/switchyard/switchyard/bench/load"
	"github.com/switchyard/switchyard/mock"
)

// sweep measures latency against offered open-loop load for the bare proxy
// and Switchyard at fractions of the bare proxy's saturation throughput,
// with a mock served inside this process (one Go runtime on the driver's
// core). At each rate the proxies take turns in short slices, like compare.
func (b *bench) sweep() {
	bare := b.rows[rowBare]
	if bare == nil || bare.Result == nil || bare.Result.Throughput() == 0 || b.ctx.Err() != nil {
		b.rep.Notes = append(b.rep.Notes, "Latency-vs-load sweep not run: the bare proxy row did not run.")
		return
	}
	sat := bare.Result.Throughput()
	var rates []float64
	for _, f := range []float64{0.1, 0.3, 0.5, 0.7, 0.9} {
		rates = append(rates, math.Max(10, math.Round(sat*f/10)*10))
	}
	b.rep.HalfRate = rates[2]
	b.rep.SweepFor = map[string]string{rowSy1: seriesSy1, rowSy10k: seriesSy10k}
	m, err := mock.Start("127.0.0.1:0", mock.Options{Name: "primary"})
	if err != nil {
		b.rep.Notes = append(b.rep.Notes, "Latency-vs-load sweep not run: in-process mock: "+firstLine(err.Error()))
		return
	}
	defer m.Close()
	upstream := m.Addr()
	b.rep.Method = append(b.rep.Method, fmt.Sprintf(
		"Latency vs offered load: open loop at 10/30/50/70/90%% of the bare proxy's closed-loop throughput (%.0f req/s), %v per step and proxy in %d slices alternating between the proxies, up to %d connections; latency counts from when a request was due, so queueing is included. Upstream: a mock inside the driver process.",
		sat, b.o.sweepStep, rounds, b.o.conns))

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
		defer func() {
			_, _ = load.Run(b.ctx, load.Config{URL: "http://" + p.addr + chatPath, Body: body, Headers: authHeader, Connections: b.o.conns, Duration: b.o.warmup})
		}()
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
	for _, rate := range rates {
		merged := make([]*load.Result, len(cs))
		for r := range rounds {
			for j := range cs {
				k := (j + r) % len(cs)
				c := cs[k]
				if c.only > 0 && c.only != rate {
					continue
				}
				res, err := load.Run(b.ctx, load.Config{
					URL: c.url, Body: c.body, Headers: authHeader, Connections: b.o.conns,
					Duration: b.o.sweepStep / rounds, Rate: rate, Timeout: 30 * time.Second,
				})
				if err != nil {
					return
				}
				if merged[k] == nil {
					merged[k] = &load.Result{Rate: rate}
				}
				merged[k].Merge(res)
			}
		}
		for k, c := range cs {
			if res := merged[k]; res != nil {
				c.series.Points = append(c.series.Points, harness.Point{Offered: rate, Result: res})
				b.log.Info().Str("series", c.series.Name).Float64("offered", rate).Float64("achieved", math.Round(res.Throughput())).
					Dur("p50", res.Latency.Quantile(0.5)).Dur("p99", res.Latency.Quantile(0.99)).Int64("errors", res.Errors).Msg("sweep step")
			}
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
		"Idle connections: %d client connections each complete one request (GET /healthz, or a chat completion, which grows the connection goroutine's stack to 8 KiB for good) and stay open; RSS is VmRSS before opening them and 1 s after; goroutine stacks and goroutines from the process's /metrics. Switchyard with the default server settings and with server.reduce_memory_usage: true; the bare proxy as configured and with fasthttp's ReduceMemoryUsage (-reduce-memory).", n))
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
		res.RSSAfter, _ = harness.MemStatus(p.proc.PID(), "VmRSS")
		if v, found, err := harness.ScrapeSamples(p.metricsURL, "go_memstats_stack_inuse_bytes", "go_goroutines"); err == nil && found[0] && found[1] {
			res.StackInuse, res.Goroutines = int64(v[0]), int64(v[1])
		}
		res.Alive = ic.Alive()
		b.log.Info().Str("process", name).Int("opened", res.Opened).Int("alive", res.Alive).
			Str("rss_before", harness.FormatBytes(res.RSSBefore)).Str("rss_after", harness.FormatBytes(res.RSSAfter)).Str("err", res.Err).Msg("idle connections")
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
