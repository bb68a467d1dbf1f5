package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchyard/switchyard/bench/load"
	"github.com/switchyard/switchyard/mock"
)

// sweep measures latency against offered open-loop load at fractions of
// the bare proxy's closed-loop throughput, the proxies taking turns in
// slices at each rate, with a mock inside this process as the upstream.
func (b *bench) sweep() {
	var sat float64
	for _, r := range b.rows {
		if r.name == rowBare && r.res != nil {
			sat = r.res.Throughput()
		}
	}
	if sat == 0 || b.ctx.Err() != nil {
		b.notes = append(b.notes, "Latency-vs-load sweep not run: the bare proxy row did not run.")
		return
	}
	var rates []float64
	for _, f := range []float64{0.1, 0.3, 0.5, 0.7, 0.9} {
		rates = append(rates, math.Max(10, math.Round(sat*f/10)*10))
	}
	half := rates[2]
	m, err := mock.Start("127.0.0.1:0", mock.Options{Name: "primary"})
	if err != nil {
		b.notes = append(b.notes, "Latency-vs-load sweep not run: in-process mock: "+firstLine(err.Error()))
		return
	}
	defer m.Close()
	b.method = append(b.method, fmt.Sprintf("Latency vs offered load: open loop at 10/30/50/70/90%% of the bare proxy's closed-loop throughput (%.0f req/s), %v per step and proxy in %d slices alternating between the proxies, up to %d connections; latency counts from when a request was due, so queueing is included. Upstream: a mock inside the driver process.",
		sat, b.o.sweepStep, rounds, b.o.conns))

	many := oneRule(m.Addr())
	many.rules = b.o.rules
	type series struct {
		name, row string
		body      []byte
		only      float64 // >0: measured at this rate only
		start     func() (*proxy, error)
		url       string
		at        map[float64]*load.Result
	}
	var ss []*series
	for _, s := range []*series{
		// The driver and the mock alone: what the other series' latency
		// includes before any proxy adds to it.
		{name: "direct to mock", body: chatBody},
		{name: "bare proxy", body: chatBody, start: func() (*proxy, error) { return b.bare(m.Addr()) }},
		{name: "Switchyard 1 rule", row: rowSy1, body: chatBody, start: func() (*proxy, error) { return b.switchyard(oneRule(m.Addr())) }},
		{name: "Switchyard 10k rules", row: rowSy10k, body: manyRulesBody(many.rules), only: half, start: func() (*proxy, error) { return b.switchyard(many) }},
	} {
		addr := m.Addr()
		if s.start != nil {
			p, err := s.start()
			if err != nil {
				b.notes = append(b.notes, fmt.Sprintf("Sweep %s not run: %s", s.name, firstLine(err.Error())))
				continue
			}
			defer p.stop()
			addr = p.addr
		}
		s.url, s.at = "http://"+addr+chatPath, map[float64]*load.Result{}
		_, _ = load.Run(b.ctx, load.Config{URL: s.url, Body: s.body, Headers: authHeader, Connections: b.o.conns, Duration: b.o.warmup})
		ss = append(ss, s)
	}
	t := &table{head: []string{"offered req/s"}}
	for _, s := range ss {
		t.head = append(t.head, s.name+" p50", s.name+" p99", s.name+" achieved")
	}
	for _, rate := range rates {
		for r := range rounds {
			for j := range ss {
				s := ss[(j+r)%len(ss)]
				if s.only > 0 && s.only != rate {
					continue
				}
				res, err := load.Run(b.ctx, load.Config{URL: s.url, Body: s.body, Headers: authHeader, Connections: b.o.conns,
					Duration: b.o.sweepStep / rounds, Rate: rate, Timeout: 30 * time.Second})
				if err != nil {
					return
				}
				if s.at[rate] == nil {
					s.at[rate] = &load.Result{}
				}
				s.at[rate].Merge(res)
			}
		}
		cells := []string{fmt.Sprintf("%.0f", rate)}
		for _, s := range ss {
			res := s.at[rate]
			if res == nil || res.Completed == 0 {
				cells = append(cells, "—", "—", "—")
				continue
			}
			b.log.Info().Str("series", s.name).Float64("offered", rate).Float64("achieved", math.Round(res.Throughput())).
				Dur("p99", res.Latency.Quantile(0.99)).Int64("errors", res.Errors).Msg("sweep step")
			cells = append(cells, duration(res.Latency.Quantile(0.5)), duration(res.Latency.Quantile(0.99)), fmt.Sprintf("%.0f", res.Throughput()))
		}
		t.add(cells...)
	}
	b.sections = append(b.sections, "## Latency vs offered load\n\n"+t.String())
	var bare *series
	for _, s := range ss {
		if s.name == "bare proxy" {
			bare = s
		}
	}
	if bare == nil || bare.at[half] == nil || bare.at[half].Completed == 0 {
		return
	}
	for _, s := range ss {
		if res := s.at[half]; s.row != "" && res != nil && res.Completed > 0 {
			b.p99Half[s.row] = res.Latency.Quantile(0.99) - bare.at[half].Latency.Quantile(0.99)
		}
	}
}

// sweepAlone is the latency sweep on its own (-only sweep): the closed-loop
// rows it needs (direct, the bare proxy for its saturation, Switchyard 1
// rule), then the sweep.
func (b *bench) sweepAlone() {
	g := &group{b: b, mock: b.primary.addr}
	b.direct = g.add("direct to mock", chatBody, nil, nil, nil).row
	bare := g.add(rowBare, chatBody, b.direct, nil, func() (*proxy, error) { return b.bare(b.primary.addr) }).row
	g.add(rowSy1, chatBody, b.direct, bare, func() (*proxy, error) { return b.switchyard(oneRule(b.primary.addr)) })
	b.compare(g)
	b.sweep()
}

// idle measures the memory of many idle keep-alive client connections:
// Switchyard with the default server settings and with
// server.reduce_memory_usage, and the bare proxy for reference.
func (b *bench) idle() {
	n := b.o.idleConns
	if n <= 0 || b.ctx.Err() != nil {
		return
	}
	b.method = append(b.method, fmt.Sprintf("Idle connections: %d client connections each complete one request (GET /healthz, or a chat completion, which grows the connection goroutine's stack to 8 KiB for good) and stay open; RSS is VmRSS before opening them and 1 s after; goroutine stacks and goroutines from the process's /metrics. Switchyard with the default server settings and with server.reduce_memory_usage: true; the bare proxy as configured and with fasthttp's ReduceMemoryUsage (-reduce-memory).", n))
	t := &table{head: []string{"process", "connections held", "still open", "RSS before", "RSS with connections", "per connection", "goroutine stacks", "goroutines", "target ≤ 64 MiB"}}
	healthz := "GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"
	chat := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: %s\r\n\r\n%s",
		chatPath, len(chatBody), authHeader[0][0], authHeader[0][1], chatBody)
	measure := func(name, req string, start func() (*proxy, error)) {
		p, err := start()
		if err != nil {
			t.add(name, "not measured: "+clip(firstLine(err.Error()), 80))
			return
		}
		defer p.stop()
		// A few requests first, so that pools and buffers exist before.
		_, _ = load.Run(b.ctx, load.Config{URL: "http://" + p.addr + chatPath, Body: chatBody, Headers: authHeader, Connections: 8, Requests: 2000})
		time.Sleep(200 * time.Millisecond)
		before := memStatus(p.pid(), "VmRSS")
		conns, err := openIdle(p.addr, req, n)
		defer closeAll(conns)
		if err != nil && len(conns) == 0 {
			t.add(name, "not measured: "+clip(firstLine(err.Error()), 80))
			return
		}
		time.Sleep(time.Second)
		after := memStatus(p.pid(), "VmRSS")
		v, err := scrape(p.metrics, "go_memstats_stack_inuse_bytes", "go_goroutines")
		if err != nil {
			v = []float64{0, 0}
		}
		check := "—"
		if strings.HasPrefix(name, "Switchyard") && len(conns) >= 10000 {
			check = passMiss(after <= 64<<20)
		}
		t.add(name, fmt.Sprintf("%d of %d", len(conns), n), strconv.Itoa(alive(conns)), mib(before), mib(after),
			fmt.Sprintf("%.1f KiB", float64(after-before)/float64(len(conns))/1024), mib(int64(v[0])), strconv.Itoa(int(v[1])), check)
		b.log.Info().Str("process", name).Int("opened", len(conns)).Str("rss_after", mib(after)).AnErr("err", err).Msg("idle connections")
	}
	for _, kind := range [][2]string{{"after /healthz", healthz}, {"after a chat completion", chat}} {
		measure("Switchyard, 1 rule (default), "+kind[0], kind[1], func() (*proxy, error) { return b.switchyard(oneRule(b.primary.addr)) })
		reduce := oneRule(b.primary.addr)
		reduce.reduce = true
		measure("Switchyard, 1 rule, reduce_memory_usage: true, "+kind[0], kind[1], func() (*proxy, error) { return b.switchyard(reduce) })
	}
	measure("bare proxy, after /healthz (proxied)", healthz, func() (*proxy, error) { return b.bare(b.primary.addr) })
	measure("bare proxy, -reduce-memory, after /healthz (proxied)", healthz, func() (*proxy, error) { return b.bare(b.primary.addr, "-reduce-memory") })
	b.sections = append(b.sections, "## Idle keep-alive connections\n\n"+t.String())
}

// openIdle opens n connections to addr, 32 at a time, sends the raw
// HTTP/1.1 request req on each and reads the answer, leaving each open and
// idle. On error the connections opened so far are returned too.
func openIdle(addr, req string, n int) ([]net.Conn, error) {
	all, errs := make([]net.Conn, n), make([]error, n)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			all[i], errs[i] = openOne(addr, req)
		})
	}
	wg.Wait()
	var conns []net.Conn
	for _, c := range all {
		if c != nil {
			conns = append(conns, c)
		}
	}
	return conns, errors.Join(errs...)
}

func openOne(addr, req string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp4", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	var resp *http.Response
	if _, err = io.WriteString(c, req); err == nil {
		resp, err = http.ReadResponse(br, nil)
	}
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		if err == nil && (resp.Close || br.Buffered() > 0) {
			err = errors.New("the server closed the connection or sent more than the answer")
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// alive counts the connections the server has not closed: a peek that
// would block means open and idle.
func alive(conns []net.Conn) (n int) {
	buf := make([]byte, 1)
	for _, c := range conns {
		if rc, err := c.(*net.TCPConn).SyscallConn(); err == nil {
			_ = rc.Read(func(fd uintptr) bool {
				if _, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT); err == unix.EAGAIN {
					n++
				}
				return true
			})
		}
	}
	return n
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}
