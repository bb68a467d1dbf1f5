package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/load"
	"github.com/switchyard/switchyard/mock"
)

// The requests every row sends. Switchyard never forwards the client's key
// (it sends the target's own); the bare proxy does.
var (
	chatBody   = []byte(`{"model":"bench-model","messages":[{"role":"user","content":"Say hello"}]}`)
	streamBody = []byte(`{"model":"bench-model","stream":true,"messages":[{"role":"user","content":"Say hello"}]}`)
	authHeader = [][2]string{{"Authorization", "Bearer " + benchClientKey}}
)

const (
	chatPath       = "/v1/chat/completions"
	streamEvents   = 20
	rounds         = 5 // slices each row's measured time is cut into
	upstreamAPIKey = "bench-upstream-key"
	benchClientKey = "bench-client-key"
	rowBare        = "bare proxy"
	rowSy1         = "Switchyard, 1 rule"
	rowSy10k       = "Switchyard, 10,000 rules"
)

// row is one measured row of the request/response or streaming table.
type row struct {
	name         string
	stream       bool
	res          *load.Result // nil: skipped
	skipped      string
	use          usage // the proxy's, over the measured slices
	used, lost   bool  // use was read / a reading failed
	rss, peak    int64 // the proxy's VmRSS after the run, VmHWM
	direct, bare *row  // what "added" subtracts; the baseline of the targets
	cost         *cost // a feature row: its cost over the same row without the feature
	extra, note  string
}

// cost holds a feature row to a target against the same configuration
// without the feature (docs/quotas.md, docs/residency.md): CPU/request at
// most maxCPU, or throughput at least minTput; 0 reports without a target.
type cost struct {
	without         *row
	maxCPU, minTput float64
}

func (r *row) requests() float64 { return float64(r.res.Completed + r.res.Errors) }

// contender is a row of a group with its proxy (nil: straight to the mock).
type contender struct {
	row      *row
	url      string
	body     []byte
	p        *proxy
	around   []func() (after func()) // called around each measured slice
	upstream mock.Stats              // what the mock counted during its slices
}

// group is rows measured in alternation, their requests sent to mock, each
// through a proxy or straight. Every request must reach the mock once; in a
// failover group, the mock's failures are noted instead.
type group struct {
	b                *bench
	mock             string
	stream, failover bool
	cs               []*contender
}

// add starts a row's proxy (start nil: the row goes straight to the mock).
// The row is skipped, with why, when the proxy does not start.
func (g *group) add(name string, body []byte, direct, bare *row, start func() (*proxy, error)) *contender {
	r := &row{name: name, stream: g.stream, direct: direct, bare: bare}
	g.b.rows = append(g.b.rows, r)
	c := &contender{row: r, url: "http://" + g.mock + chatPath, body: body}
	if g.b.ctx.Err() != nil {
		r.skipped = "interrupted"
		return c
	}
	if start != nil {
		p, err := start()
		if err != nil {
			r.skipped = firstLine(err.Error())
			g.b.log.Warn().Err(err).Str("row", name).Msg("row skipped")
			return c
		}
		c.p, c.url = p, "http://"+p.addr+chatPath
	}
	g.cs = append(g.cs, c)
	return c
}

// compare warms the group's rows up, then measures them in alternation:
// rounds passes, each giving every row duration/rounds, the first row
// rotating, so background load on the machine falls on all of them alike.
// The proxies are stopped at the end.
func (b *bench) compare(g *group) {
	var live []*contender
	for _, c := range g.cs {
		if c.p != nil {
			defer c.p.stop()
		}
		c.around = append(c.around, func() func() {
			st0, err0 := mockStats(g.mock)
			return func() {
				st1, err1 := mockStats(g.mock)
				c.upstream.Requests += st1.Requests - st0.Requests
				c.upstream.Failed += st1.Failed - st0.Failed
				if err0 != nil || err1 != nil {
					c.upstream.Requests = math.MinInt32 // reported as a mismatch
				}
			}
		})
		if b.warm(c) {
			live = append(live, c)
		}
	}
	for r := range rounds {
		for i := range live {
			if b.ctx.Err() == nil {
				b.measure(live[(i+r)%len(live)], b.o.duration/rounds)
			}
		}
	}
	for _, c := range live {
		r := c.row
		if r.res == nil {
			continue
		}
		if c.p != nil {
			r.rss, r.peak = memStatus(c.p.pid(), "VmRSS"), memStatus(c.p.pid(), "VmHWM")
		}
		if g.failover && r.res.Completed > 0 {
			r.note = fmt.Sprintf("during its measured slices the primary answered 503 %d times for %d requests served (%.2f per request)",
				c.upstream.Failed, r.res.Completed, float64(c.upstream.Failed)/float64(r.res.Completed))
		} else if sent := r.res.Completed + r.res.Errors; !g.failover && c.upstream.Requests != sent {
			r.note = fmt.Sprintf("the mock received %d requests for the %d sent in the measured slices", c.upstream.Requests, sent)
		}
		ev := b.log.Info().Str("row", r.name).Float64("req_per_s", math.Round(r.res.Throughput())).
			Dur("p50", r.res.Latency.Quantile(0.5)).Dur("p99", r.res.Latency.Quantile(0.99)).Int64("errors", r.res.Errors)
		if r.used && !r.lost {
			ev = ev.Dur("cpu_per_req", time.Duration(r.use.cpu/r.requests()*1e9))
		}
		ev.Msg("measured")
	}
}

func (b *bench) loadConfig(c *contender, d time.Duration) load.Config {
	return load.Config{URL: c.url, Body: c.body, Headers: authHeader, Connections: b.o.conns,
		Duration: d, Stream: c.row.stream, Timeout: 30 * time.Second}
}

// warm runs the unmeasured warm-up; false (the row skipped) when nothing
// succeeds.
func (b *bench) warm(c *contender) bool {
	res, err := load.Run(b.ctx, b.loadConfig(c, b.o.warmup))
	if err == nil && res.Completed > 0 {
		return true
	}
	c.row.skipped = "warm-up failed"
	if res != nil && res.FirstError != "" {
		c.row.skipped += ": " + clip(res.FirstError, 120)
	}
	ev := b.log.Warn().Str("row", c.row.name).Str("why", c.row.skipped)
	if c.p != nil {
		ev = ev.Str("log", c.p.lastLines(5))
	}
	ev.Msg("row skipped")
	return false
}

// measure measures one slice of c and adds it to c.row, with the proxy's
// usage read around it.
func (b *bench) measure(c *contender, d time.Duration) {
	var u0 usage
	var err0 error
	if c.p != nil {
		u0, err0 = c.p.usage()
	}
	var after []func()
	for _, f := range c.around {
		after = append(after, f())
	}
	res, err := load.Run(b.ctx, b.loadConfig(c, d))
	if err != nil {
		return
	}
	for _, f := range after {
		f()
	}
	r := c.row
	if r.res == nil {
		r.res = &load.Result{}
	}
	r.res.Merge(res)
	if c.p != nil {
		u1, err1 := c.p.usage()
		r.use, r.used = r.use.plus(u1, 1).plus(u0, -1), true
		r.lost = r.lost || err0 != nil || err1 != nil
	}
}

// scenarios measures every row, group by group.
func (b *bench) scenarios() {
	g := &group{b: b, mock: b.primary.addr}
	b.direct = g.add("direct to mock", chatBody, nil, nil, nil).row
	bare := g.add(rowBare, chatBody, b.direct, nil, func() (*proxy, error) { return b.bare(b.primary.addr) }).row
	keys := oneRule(b.primary.addr)
	keys.yaml = clientKeysYAML
	many := oneRule(b.primary.addr)
	many.rules = b.o.rules
	for _, r := range []struct {
		name string
		c    gw
	}{{rowSy1, oneRule(b.primary.addr)}, {rowSy1 + ", client keys", keys}, {rowSy10k, many}} {
		g.add(r.name, manyRulesBody(r.c.rules), b.direct, bare, func() (*proxy, error) { return b.switchyard(r.c) })
	}
	b.compare(g)

	// Failover: the primary mock fails every request meanwhile.
	if err := mockCall(b.primary.addr, "/_mock/fail?status=503"); err != nil {
		b.log.Warn().Err(err).Msg("cannot make the primary mock fail")
	}
	g = &group{b: b, mock: b.primary.addr, failover: true}
	for _, f := range []struct{ name, yaml string }{
		{"Switchyard failover, primary 503 every request", "    circuit_breaker:\n      failure_threshold: 1000000000\n"},
		{"Switchyard failover, primary circuit open", ""},
	} {
		c := gw{targets: []string{mockURL(b.primary.addr), mockURL(b.secondary.addr)}, targetYAML: f.yaml}
		g.add(f.name, chatBody, b.direct, nil, func() (*proxy, error) { return b.switchyard(c) })
	}
	b.compare(g)
	if err := mockCall(b.primary.addr, "/_mock/reset"); err != nil {
		b.log.Warn().Err(err).Msg("cannot reset the primary mock")
	}

	g = &group{b: b, mock: b.streamer.addr, stream: true}
	direct := g.add("direct to mock (SSE)", streamBody, nil, nil, nil).row
	bare = g.add(rowBare+" (SSE)", streamBody, direct, nil, func() (*proxy, error) { return b.bare(b.streamer.addr) }).row
	g.add(rowSy1+" (SSE)", streamBody, direct, bare, func() (*proxy, error) { return b.switchyard(oneRule(b.streamer.addr)) })
	b.compare(g)

	b.featureRows()
	b.translationRows()
	b.bodySizes()
	b.unpinnedRows()
	b.longStreams()
}

// unpinnedRows runs the 74 B and 1 KB pairs again unpinned, as users deploy
// them (when the others were pinned).
func (b *bench) unpinnedRows() {
	if b.proxyCPUs != nil {
		b.unpinned = true
		b.sizeGroup(0, " (unpinned)")
		b.sizeGroup(1<<10, " (unpinned)")
		b.unpinned = false
	}
}

// manyRulesBody is the chat body naming the last of n rules' model (n <= 1:
// bench-model).
func manyRulesBody(n int) []byte {
	if n <= 1 {
		return chatBody
	}
	return []byte(strings.Replace(string(chatBody), "bench-model", ruleModel(n-1), 1))
}

// bodySizes compares the bare proxy and the 1-rule Switchyard on chat
// bodies of 1 KB to 1 MB: a chat with history, a RAG prompt, an agent's turn.
func (b *bench) bodySizes() {
	for _, n := range []int{1 << 10, 16 << 10, 128 << 10, 1 << 20} {
		b.sizeGroup(n, "")
	}
}

// sizeGroup compares the two on a body of n bytes (0: the 74-byte body).
func (b *bench) sizeGroup(n int, suffix string) {
	body := chatBody
	switch {
	case n >= 1<<20:
		body, suffix = chatBodyOfSize(n), ", "+strconv.Itoa(n>>20)+" MB body"+suffix
	case n > 0:
		body, suffix = chatBodyOfSize(n), ", "+strconv.Itoa(n>>10)+" KB body"+suffix
	}
	g := &group{b: b, mock: b.primary.addr}
	bare := g.add(rowBare+suffix, body, nil, nil, func() (*proxy, error) { return b.bare(b.primary.addr) }).row
	g.add(rowSy1+suffix, body, nil, bare, func() (*proxy, error) { return b.switchyard(oneRule(b.primary.addr)) })
	b.compare(g)
}

// chatBodyOfSize is a chat request of about n bytes: a system prompt, then
// user and assistant turns of prose with escaped line breaks and quotes,
// and a code block.
func chatBodyOfSize(n int) []byte {
	var s strings.Builder
	s.WriteString(`{"model":"bench-model","messages":[{"role":"system","content":"You are a careful coding assistant.\nAnswer in Markdown."}`)
	prose := "The gateway reads the request body once, routes on four fields, and forwards the bytes untouched. "
	code := `func route(b []byte) error {\n\tif len(b) == 0 {\n\t\treturn errEmpty\n\t}\n\treturn nil\n}\n`
	for i := 0; s.Len() < n-120; i++ {
		fmt.Fprintf(&s, `,{"role":%q,"content":"%sAs the operator said, \"pin it\" (turn %d).\n%s"}`,
			[2]string{"user", "assistant"}[i%2], strings.Repeat(prose, 4), i, strings.Repeat(code, 3))
	}
	s.WriteString(`],"temperature":0.2,"max_tokens":256}`)
	return []byte(s.String())
}
