package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/bench/harness"
)

// Feature rows: the 1-rule Switchyard with one feature on (README, Client
// keys, Quotas, Residency, Audit log, Tracing, Admin console), each
// compared in alternation with the bare proxy and the plain 1-rule row.
// A binary that does not accept a row's config skips that row.
const (
	limitsYAML = "      limits:\n        requests_per_minute: 1000000000\n        tokens_per_minute: 1000000000\n"
	// keyYAML is clientKeysYAML's key entry, to which a row adds fields.
	keyYAML = "auth:\n  keys:\n    - name: bench\n      key: " + benchClientKey + "\n"
)

// The feature blocks (README, Quotas; Residency; Audit log; Tracing; Admin
// console), appended to the 1-rule config.
const (
	residencyTargetYAML = "    residency: eu\n"
	residencyKeyYAML    = "      residency: [eu]\n"
)

// redisYAML's timeout is 1s, not the default 50ms: on a loaded machine a
// slower round trip would switch the row to the local fallback (counted in
// memory), and it would measure that instead of Redis.
func redisYAML(addr string) string {
	return "quotas:\n  store: redis\n  redis:\n    url: redis://" + addr + "\n    timeout: 1s\n"
}

func auditYAML(dir string) string {
	return "audit:\n  path: " + dir + "/audit.jsonl\n  signing_key: ${BENCH_AUDIT_KEY}\n"
}

func tracingYAML(addr string) string {
	return "tracing:\n  otlp_endpoint: http://" + addr + "\n  sample_ratio: 0.01\n"
}

func adminYAML(addr string) string { return "admin:\n  listen: " + addr + "\n" }

func (b *bench) featureRows() {
	bare := &harness.Row{Name: rowBare + " (features)", CPUSeconds: -1, Mallocs: -1}
	sy := &harness.Row{Name: rowSy1 + " (features)", CPUSeconds: -1, Mallocs: -1, Bare: bare}
	b.rep.Rows = append(b.rep.Rows, bare, sy)
	target := gwTarget{name: "primary", baseURL: b.mockURL(b.primary)}
	group := []*contender{
		b.viaProxy(bare, chatBody, func() (*proxy, error) { return b.startBare(b.primary.Addr) }),
		b.viaProxy(sy, chatBody, func() (*proxy, error) { return b.oneRule(b.primary) }),
	}
	row := func(name string) *harness.Row {
		r := &harness.Row{Name: "Switchyard, " + name, CPUSeconds: -1, Mallocs: -1, Bare: bare, Direct: b.rows[rowDirect]}
		b.rep.Rows = append(b.rep.Rows, r)
		return r
	}
	add := func(name string, gp gwProc, t gwTarget) *contender {
		c := b.viaProxy(row(name), chatBody, func() (*proxy, error) { return b.feature(name, gp, t) })
		group = append(group, c)
		return c
	}

	memory := add("client keys + limits (memory)", gwProc{appendYAML: keyYAML + limitsYAML}, target)

	if r, err := b.startRedis(); err != nil {
		row("limits (Redis on loopback)").Skipped = "redis-server: " + firstLine(err.Error())
	} else {
		defer r.Stop()
		c := add("limits (Redis on loopback)", gwProc{appendYAML: keyYAML + limitsYAML + redisYAML(r.Addr)}, target)
		if c != nil {
			if memory != nil {
				c.row.Direct = memory.row // "added": what Redis adds to the same limits in memory
			}
			// side is read before and after each slice: per command, the
			// calls made during the row's slices.
			var last map[string]int64
			during, after := map[string]int64{}, false
			c.side = func() int64 {
				calls, err := redisCommandStats(r.Addr)
				if err != nil {
					return -1 << 40 // poisons the sum
				}
				var sum int64
				for k, v := range calls {
					if k == "info" {
						continue // ours
					}
					sum += v
					if after {
						during[k] += v - last[k]
					}
				}
				last, after = calls, !after
				return sum
			}
			defer func() {
				if res := c.row.Result; res != nil && res.Completed > 0 && c.sided >= 0 {
					n := float64(res.Completed + res.Errors)
					c.row.Extra = fmt.Sprintf("Redis commands/req: %.2f (%s); added = over the memory row", float64(c.sided)/n, perCommand(during, n))
				}
			}()
		}
	}

	eu := target
	eu.extra = residencyTargetYAML
	add("residency", gwProc{appendYAML: keyYAML + residencyKeyYAML}, eu)

	if key, err := b.auditKey(); err != nil {
		row("audit log on").Skipped = "`switchyard audit keygen`: " + firstLine(err.Error())
	} else {
		add("audit log on", gwProc{appendYAML: keyYAML + auditYAML(b.tmp), env: []string{"BENCH_AUDIT_KEY=" + key}}, target)
	}

	sink, spans, err := otlpSink()
	if err == nil {
		defer sink.Close()
		c := add("tracing sample_ratio 0.01", gwProc{appendYAML: tracingYAML(sink.Addr().String())}, target)
		if c != nil {
			defer func() { c.row.Extra = fmt.Sprintf("OTLP exports received: %d", spans.Load()) }()
		}
	}

	if adminAddr, err := freeAddr(); err == nil {
		c := add("admin listener + a client polling /api/decisions", gwProc{appendYAML: adminYAML(adminAddr)}, target)
		if c != nil {
			stop := pollDecisions("http://" + adminAddr + "/api/decisions")
			defer func() { c.row.Extra = fmt.Sprintf("polls answered 200: %d", stop()) }()
		}
	}

	countUpstream(group, b.primary.Addr)
	b.compare(group, nil)
	checkUpstream(group)
}

// perCommand is "evalsha 1.00, get 0.50" for the commands in calls, most
// first, each divided by n.
func perCommand(calls map[string]int64, n float64) string {
	names := make([]string, 0, len(calls))
	for k, v := range calls {
		if v > 0 {
			names = append(names, k)
		}
	}
	sort.Slice(names, func(i, j int) bool { return calls[names[i]] > calls[names[j]] })
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %.2f", k, float64(calls[k])/n)
	}
	return strings.Join(parts, ", ")
}

// startRedis starts redis-server on a free loopback port, without
// persistence, beside the mocks.
func (b *bench) startRedis() (*harness.Proc, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	p, err := harness.Start(b.ctx, bin, []string{"--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no"},
		harness.StartOptions{Name: "redis-server", CPUs: b.sideCPUs})
	if err != nil {
		return nil, err
	}
	p.Addr = addr
	for range 100 {
		if _, err := redisCommandStats(addr); err == nil {
			return p, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Stop()
	return nil, fmt.Errorf("not answering on %s: %s", addr, lastLines(p.Log(), 3))
}

// redisCommandStats returns the calls of each command (INFO commandstats).
func redisCommandStats(addr string) (map[string]int64, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("INFO commandstats\r\n")); err != nil {
		return nil, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		return nil, fmt.Errorf("INFO: %q %v", head, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	stats := map[string]int64{}
	for line := range strings.SplitSeq(string(buf), "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if ok && len(line) > len("cmdstat_") && line[:8] == "cmdstat_" {
			v, _, _ := strings.Cut(rest, ",")
			stats[name], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return stats, nil
}

// auditKey runs `switchyard audit keygen` and returns the private key it
// prints: the first line that is not a "#" comment after a comment naming
// the private key (the first such line when none does), without a shell
// assignment's "NAME=".
func (b *bench) auditKey() (string, error) {
	out, err := exec.CommandContext(b.ctx, b.syBin, "audit", "keygen").Output()
	if err != nil {
		return "", err
	}
	first, private := "", false
	for line := range strings.SplitSeq(string(out), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "#"):
			private = strings.Contains(strings.ToLower(line), "private")
		case line == "":
		case private:
			return unassigned(line), nil
		case first == "":
			first = unassigned(line)
		}
	}
	if first == "" {
		return "", fmt.Errorf("no key in its output")
	}
	return first, nil
}

// unassigned is line without a leading "NAME=" (NAME of A-Z, 0-9, _).
func unassigned(line string) string {
	name, value, ok := strings.Cut(line, "=")
	if !ok || name == "" || strings.TrimFunc(name, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' }) != "" {
		return line
	}
	return value
}

// otlpSink is an OTLP/HTTP collector that answers 200 to everything and
// counts the exports.
func otlpSink() (net.Listener, *atomic.Int64, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	var n atomic.Int64
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		n.Add(1)
		ctx.SetContentType("application/x-protobuf")
	}}
	go func() { _ = srv.Serve(ln) }()
	return ln, &n, nil
}

// pollDecisions polls url once a second, as the admin console does, until
// the returned stop is called; stop returns the polls answered 200.
func pollDecisions(url string) (stop func() int64) {
	done := make(chan struct{})
	var ok atomic.Int64
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if status, _, err := fasthttp.GetTimeout(nil, url, time.Second); err == nil && status == 200 {
					ok.Add(1)
				}
			}
		}
	}()
	return func() int64 { close(done); return ok.Load() }
}
