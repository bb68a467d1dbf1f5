package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/switchyard/switchyard/bench/load"
)

// Long-lived streams: N connections, each streaming one chat completion
// after another of longEvents events longInterval apart, as chat clients
// hold them; about two streams per connection in longRun.
const (
	longEvents   = 100
	longInterval = 20 * time.Millisecond
	longRun      = 5 * time.Second
)

// longStreams runs 1,000 and 5,000 streams through the bare proxy (which
// relays with fasthttp's chunked copy, a flush per chunk) and Switchyard.
func (b *bench) longStreams() {
	if b.ctx.Err() != nil {
		return
	}
	m, err := start(b.ctx, "mock long", b.sideCPUs, []string{"GOMAXPROCS=1"}, true, b.mockBin, "-listen", "127.0.0.1:0", "-name", "long",
		"-stream-events", strconv.Itoa(longEvents), "-stream-interval", longInterval.String())
	if err != nil {
		b.log.Warn().Err(err).Msg("long-streams mock does not start; rows skipped")
		return
	}
	defer m.stop()
	t := &table{head: []string{"scenario", "streams completed", "events", "errors (streams cut or without [DONE])", "proxy CPU/event", "RSS before", "RSS mid-run", "RSS/stream"}}
	checks := &table{head: []string{"vs bare proxy", "CPU/event (target ≤ 1.25×)", "RSS/stream (target ≤ 1.25×)"}}
	for _, n := range []int{1000, 5000} {
		sy := oneRule(m.addr)
		sy.targetYAML = fmt.Sprintf("    concurrency:\n      max_concurrency: %d\n", n+100)
		var cpu, rss [2]float64 // per event, per stream; bare then Switchyard
		for i, r := range []struct {
			name  string
			start func() (*proxy, error)
		}{
			{fmt.Sprintf("bare proxy, %d streams", n), func() (*proxy, error) { return b.bare(m.addr) }},
			{fmt.Sprintf("Switchyard, 1 rule, %d streams", n), func() (*proxy, error) { return b.switchyard(sy) }},
		} {
			p, err := r.start()
			if err != nil {
				t.add(r.name, "not run: "+firstLine(err.Error()))
				continue
			}
			rssIdle := memStatus(p.pid(), "VmRSS")
			u0, err0 := p.usage()
			mid := make(chan int64, 1)
			time.AfterFunc(longRun/2, func() { mid <- memStatus(p.pid(), "VmRSS") }) // every connection in its second stream
			res, err := load.Run(b.ctx, load.Config{URL: "http://" + p.addr + chatPath, Body: streamBody, Headers: authHeader,
				Connections: n, Duration: longRun, Stream: true, Timeout: 30 * time.Second})
			rssAt := <-mid
			u1, err1 := p.usage()
			p.stop()
			if err != nil {
				t.add(r.name, "not run: the load run failed")
				continue
			}
			cpuCell := "—"
			if err0 == nil && err1 == nil && res.Events > 0 {
				cpu[i] = (u1.cpu - u0.cpu) / float64(res.Events)
				cpuCell = duration(time.Duration(cpu[i] * 1e9))
			}
			rss[i] = float64(rssAt-rssIdle) / float64(n)
			t.add(r.name, strconv.FormatInt(res.Completed, 10), strconv.FormatInt(res.Events, 10), strconv.FormatInt(res.Errors, 10),
				cpuCell, mib(rssIdle), mib(rssAt), mib(int64(rss[i])))
			b.log.Info().Str("row", r.name).Int64("streams", res.Completed).Int64("events", res.Events).Int64("errors", res.Errors).Str("first_error", res.FirstError).Msg("measured")
		}
		ratio := func(v [2]float64) string {
			if v[0] <= 0 || v[1] <= 0 {
				return "n/a"
			}
			return fmt.Sprintf("%.2f× %s", v[1]/v[0], passMiss(v[1]/v[0] <= targetStream))
		}
		checks.add(fmt.Sprintf("Switchyard, 1 rule, %d streams vs bare proxy, %d streams", n, n), ratio(cpu), ratio(rss))
	}
	b.sections = append(b.sections, fmt.Sprintf("## Long-lived streams\n\nClosed loop of N connections, each streaming one chat completion after another: %d `chat.completion.chunk` events %s apart, then `data: [DONE]`, for %s. "+
		"CPU per event is the proxy's CPU time over the events the driver received; RSS per stream is the proxy's VmRSS mid-run minus its VmRSS before the run, over N. "+
		"The baseline is the bare proxy, which relays the streamed answer with fasthttp's chunked copy and a flush per chunk.\n\n",
		longEvents, longInterval, longRun)+t.String()+checks.String())
}
