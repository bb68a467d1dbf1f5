package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/harness"
	"github.com/switchyard/switchyard/bench/load"
)

// The long-lived-streams scenario: many concurrent streams, each of
// longEvents events longInterval apart, as chat clients hold them. The
// baseline twin is the bare proxy, which relays a streamed answer with
// fasthttp's own chunked copy, a flush per chunk: the leanest correct SSE
// relay fasthttp allows.
const (
	longEvents   = 100
	longInterval = 20 * time.Millisecond
	// longRun is each measured run: two streams per connection, about.
	longRun = 5 * time.Second
)

var longStreamCounts = []int{1000, 5000}

// streamsRow is one measured run of the scenario.
type streamsRow struct {
	name           string
	streams        int
	res            *load.Result
	cpu            float64 // proxy CPU seconds over the run
	rssIdle, rssAt int64   // proxy VmRSS before the run and mid-run
	skipped        string
}

func (r *streamsRow) cpuPerEvent() (time.Duration, bool) {
	if r.res == nil || r.res.Events == 0 || r.cpu <= 0 {
		return 0, false
	}
	return time.Duration(r.cpu / float64(r.res.Events) * float64(time.Second)), true
}

func (r *streamsRow) rssPerStream() (int64, bool) {
	if r.res == nil || r.rssAt <= 0 || r.rssIdle <= 0 {
		return 0, false
	}
	return (r.rssAt - r.rssIdle) / int64(r.streams), true
}

// longStreams runs the scenario for each count against the bare proxy and
// Switchyard and adds its section to the report.
func (b *bench) longStreams() {
	if b.ctx.Err() != nil {
		return
	}
	mock, err := harness.Start(b.ctx, b.mockBin, []string{"-listen", "127.0.0.1:0", "-name", "long",
		"-stream-events", fmt.Sprint(longEvents), "-stream-interval", longInterval.String()},
		harness.StartOptions{Name: "mock long", CPUs: b.sideCPUs, Env: []string{"GOMAXPROCS=1"}, WaitListening: true})
	if err != nil {
		b.log.Warn().Err(err).Msg("long-streams mock does not start; scenario skipped")
		return
	}
	defer mock.Stop()
	var rows []*streamsRow
	for _, n := range longStreamCounts {
		bare := &streamsRow{name: fmt.Sprintf("bare proxy, %d streams", n), streams: n}
		sy := &streamsRow{name: fmt.Sprintf("Switchyard, 1 rule, %d streams", n), streams: n}
		b.longRun(bare, func() (*proxy, error) { return b.startBare(mock.Addr) })
		b.longRun(sy, func() (*proxy, error) {
			return b.startSwitchyard(fmt.Sprintf("long-%d", n), false,
				[]gwTarget{{name: "primary", baseURL: b.mockURL(mock), maxConcurrency: n + 100}}, oneRuleRules)
		})
		rows = append(rows, bare, sy)
	}
	b.rep.Sections = append(b.rep.Sections, longStreamsSection(rows))
}

// longRun measures one row with its own proxy process.
func (b *bench) longRun(r *streamsRow, start func() (*proxy, error)) {
	p, err := start()
	if err != nil {
		r.skipped = firstLine(err.Error())
		return
	}
	defer p.stop()
	pid := p.proc.PID()
	r.rssIdle, _ = harness.MemStatus(pid, "VmRSS")
	cpu0, err0 := harness.CPUSeconds(pid)
	done := make(chan *load.Result, 1)
	go func() {
		res, err := load.Run(b.ctx, load.Config{URL: "http://" + p.addr + chatPath, Body: streamBody, Headers: authHeader,
			Connections: r.streams, Duration: longRun, Stream: true, Timeout: 30 * time.Second})
		if err != nil {
			res = nil
		}
		done <- res
	}()
	// Mid-run every connection is in its second stream.
	select {
	case <-time.After(longRun / 2):
		r.rssAt, _ = harness.MemStatus(pid, "VmRSS")
	case <-b.ctx.Done():
	}
	r.res = <-done
	if cpu1, err := harness.CPUSeconds(pid); err == nil && err0 == nil {
		r.cpu = cpu1 - cpu0
	}
	if r.res == nil {
		r.skipped = "the load run failed"
		return
	}
	b.log.Info().Str("scenario", r.name).Int64("streams", r.res.Completed).Int64("events", r.res.Events).Str("first_error", r.res.FirstError).
		Int64("errors", r.res.Errors).Msg("measured")
}

// longStreamsSection renders the scenario's table and ratio checks.
func longStreamsSection(rows []*streamsRow) string {
	var s strings.Builder
	s.WriteString("## Long-lived streams\n\n")
	fmt.Fprintf(&s, "Closed loop of N connections, each streaming one chat completion after another: %d `chat.completion.chunk` events %s apart, then `data: [DONE]`, for %s. "+
		"CPU per event is the proxy's CPU time over the events the driver received; RSS per stream is the proxy's VmRSS mid-run minus its VmRSS before the run, over N. "+
		"The baseline is the bare proxy, which relays the streamed answer with fasthttp's chunked copy and a flush per chunk.\n\n",
		longEvents, longInterval, longRun)
	s.WriteString("| scenario | streams completed | events | errors (streams cut or without [DONE]) | proxy CPU/event | RSS before | RSS mid-run | RSS/stream |\n")
	s.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		if r.skipped != "" {
			fmt.Fprintf(&s, "| %s | not run: %s |||||||\n", r.name, r.skipped)
			continue
		}
		cpu, rss := "—", "—"
		if d, ok := r.cpuPerEvent(); ok {
			cpu = harness.FormatDuration(d)
		}
		if v, ok := r.rssPerStream(); ok {
			rss = harness.FormatBytes(v)
		}
		fmt.Fprintf(&s, "| %s | %d | %d | %d | %s | %s | %s | %s |\n", r.name, r.res.Completed, r.res.Events, r.res.Errors,
			cpu, harness.FormatBytes(r.rssIdle), harness.FormatBytes(r.rssAt), rss)
	}
	s.WriteString("\n| vs bare proxy | CPU/event (target ≤ 1.25×) | RSS/stream (target ≤ 1.25×) |\n|---|--:|--:|\n")
	for i := 0; i+1 < len(rows); i += 2 {
		bare, sy := rows[i], rows[i+1]
		cpu, rss := "n/a", "n/a"
		if a, ok := sy.cpuPerEvent(); ok {
			if c, ok := bare.cpuPerEvent(); ok && c > 0 {
				ratio := float64(a) / float64(c)
				cpu = fmt.Sprintf("%.2f× %s", ratio, passMiss(ratio <= 1.25))
			}
		}
		if a, ok := sy.rssPerStream(); ok {
			if c, ok := bare.rssPerStream(); ok && c > 0 {
				ratio := float64(a) / float64(c)
				rss = fmt.Sprintf("%.2f× %s", ratio, passMiss(ratio <= 1.25))
			}
		}
		fmt.Fprintf(&s, "| %s vs %s | %s | %s |\n", sy.name, bare.name, cpu, rss)
	}
	s.WriteString("\n")
	return s.String()
}

func passMiss(ok bool) string {
	if ok {
		return "pass"
	}
	return "**miss**"
}
