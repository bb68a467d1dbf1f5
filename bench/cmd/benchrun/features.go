package main

import (
	"bufio"
	"errors"
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

	"github.com/switchyard/switchyard/audit"
)

// The feature blocks (client keys, quotas, residency, the audit log, tracing,
// the console: docs/client-keys.md, docs/quotas.md, docs/residency.md,
// docs/console.md) appended to the 1-rule config. The Redis row's
// store timeout is 1s, not the default 50ms: on a loaded machine a slower
// round trip switches the gateway to the local fallback (counted in
// memory), and the row would measure that instead of Redis.
const (
	clientKeysYAML      = "auth:\n  keys:\n    - name: bench\n      key: " + benchClientKey + "\n"
	limitsYAML          = clientKeysYAML + "      limits:\n        requests_per_minute: 1000000000\n        tokens_per_minute: 1000000000\n"
	residencyYAML       = clientKeysYAML + "      residency: [eu]\n"
	residencyTargetYAML = "    residency: eu\n"
	redisYAML           = limitsYAML + "quotas:\n  store: redis\n  redis:\n    url: redis://%s\n    timeout: 1s\n"
	auditYAML           = clientKeysYAML + "audit:\n  path: %s/audit.jsonl\n  signing_key: \"%s\"\n"
	tracingYAML         = "tracing:\n  otlp_endpoint: http://%s\n  sample_ratio: 0.01\n"
	adminYAML           = "admin:\n  listen: %s\n"
)

// featureRows measures the 1-rule Switchyard with one feature on, in
// alternation with the bare proxy and the plain 1-rule row.
func (b *bench) featureRows() {
	g := &group{b: b, mock: b.primary.addr}
	bare := g.add(rowBare+" (features)", chatBody, nil, nil, func() (*proxy, error) { return b.bare(b.primary.addr) }).row
	sy1 := g.add(rowSy1+" (features)", chatBody, nil, bare, func() (*proxy, error) { return b.switchyard(oneRule(b.primary.addr)) }).row
	// add starts a feature row's Switchyard with yaml appended, unless err.
	add := func(name, yaml string, err error) *contender {
		c := oneRule(b.primary.addr)
		c.yaml = yaml
		if yaml == residencyYAML {
			c.targetYAML = residencyTargetYAML
		}
		return g.add("Switchyard, "+name, chatBody, b.direct, bare, func() (*proxy, error) {
			if err != nil {
				return nil, err
			}
			return b.switchyard(c)
		})
	}

	keys := add("client keys", clientKeysYAML, nil).row
	keys.cost = &cost{without: sy1}
	memory := add("client keys + limits (memory)", limitsYAML, nil)
	memory.row.cost = &cost{without: keys, maxCPU: targetFeatureCPU}

	var raddr string // the row is skipped when redis-server did not start
	redis, err := b.startRedis()
	if err == nil {
		defer redis.stop()
		raddr = redis.addr
	}
	c := add("limits (Redis on loopback)", fmt.Sprintf(redisYAML, raddr), err)
	c.row.direct = memory.row // "added": what Redis adds to the same limits in memory
	c.row.cost = &cost{without: memory.row, minTput: targetRedisThroughput}
	calls := map[string]int64{}
	var redisErr error
	var redisCPU float64 // redis-server's CPU seconds over the measured runs
	c.around = append(c.around, func() func() {
		if redis == nil {
			return func() {}
		}
		s0, err0 := redisCommandStats(raddr)
		u0, erru0 := readUsage(redis.pid(), "")
		return func() {
			s1, err1 := redisCommandStats(raddr)
			u1, erru1 := readUsage(redis.pid(), "")
			for k, v := range s1 {
				calls[k] += v - s0[k]
			}
			redisCPU += u1.cpu - u0.cpu
			redisErr = errors.Join(redisErr, err0, err1, erru0, erru1)
		}
	})

	add("residency", residencyYAML, nil).row.cost = &cost{without: keys, maxCPU: targetFeatureCPU}
	key, _, err := audit.GenerateKey()
	add("audit log on", fmt.Sprintf(auditYAML, b.tmp, key), err).row.cost = &cost{without: keys, maxCPU: targetFeatureCPU}

	var saddr string
	sink, spans, err := otlpSink()
	if err == nil {
		defer sink.Close()
		saddr = sink.Addr().String()
	}
	tracing := add("tracing sample_ratio 0.01", fmt.Sprintf(tracingYAML, saddr), err)
	tracing.row.cost = &cost{without: sy1}

	// The access log as shipped (on by default): a line a request to
	// stderr, here a pipe the driver reads, as a log collector would.
	al := oneRule(b.primary.addr)
	al.accessLog = true
	g.add("Switchyard, access log on", chatBody, b.direct, bare, func() (*proxy, error) { return b.switchyard(al) }).row.cost = &cost{without: sy1}

	adminAddr, err := freeAddr()
	admin := add("admin listener + a client polling /api/decisions", fmt.Sprintf(adminYAML, adminAddr), err)
	admin.row.cost = &cost{without: sy1}
	polls := pollDecisions("http://" + adminAddr + "/api/decisions")

	b.compare(g)
	if res := c.row.res; res != nil && redisErr == nil {
		n := float64(res.Completed + res.Errors)
		delete(calls, "info") // ours
		reads := calls[readsStat]
		delete(calls, readsStat)
		c.row.extra = fmt.Sprintf("Redis commands/req: %s; socket reads by redis-server/req: %.2f; redis-server CPU/req: %.1f µs (on the driver's core); added = over the memory row", perCommand(calls, n), float64(reads)/n, redisCPU/n*1e6)
	}
	if tracing.row.res != nil {
		tracing.row.extra = fmt.Sprintf("OTLP exports received: %d", spans.Load())
	}
	if n := polls(); admin.row.res != nil {
		admin.row.extra = fmt.Sprintf("polls answered 200: %d", n)
	}
}

// perCommand is "7.24 (get 3.00, set 2.19, ...)": commands per request,
// in all and by command, most first. Commands a script runs count too;
// evalsha is the script calls (the gateway sends the checks that arrive
// together as one call per key, so fewer than one a request).
func perCommand(calls map[string]int64, n float64) string {
	var names []string
	var sum int64
	for k, v := range calls {
		if v > 0 {
			names, sum = append(names, k), sum+v
		}
	}
	sort.Slice(names, func(i, j int) bool { return calls[names[i]] > calls[names[j]] })
	for i, k := range names {
		names[i] = fmt.Sprintf("%s %.2f", k, float64(calls[k])/n)
	}
	return fmt.Sprintf("%.2f (%s)", float64(sum)/n, strings.Join(names, ", "))
}

// startRedis starts redis-server without persistence on a free loopback
// port beside the mocks.
func (b *bench) startRedis() (*proc, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	p, err := start(b.ctx, "redis-server", b.sideCPUs, nil, false, bin, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no")
	if err != nil {
		return nil, err
	}
	p.addr = addr
	for range 100 {
		if _, err = redisCommandStats(addr); err == nil {
			return p, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stop()
	return nil, fmt.Errorf("redis-server not answering on %s: %v %s", addr, err, p.lastLines(3))
}

// readsStat is the entry of redisCommandStats that holds the server's
// socket reads (INFO stats total_reads_processed): a read carries what a
// client wrote together.
const readsStat = "(reads)"

// redisCommandStats is the calls of each command (INFO commandstats) and,
// as readsStat, the socket reads.
func redisCommandStats(addr string) (map[string]int64, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("INFO stats commandstats\r\n")); err != nil {
		return nil, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	n, err2 := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if err != nil || err2 != nil || !strings.HasPrefix(head, "$") {
		return nil, fmt.Errorf("INFO: %q %v", head, err)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	stats := map[string]int64{}
	for line := range strings.SplitSeq(string(buf), "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			name, rest, _ := strings.Cut(rest, ":calls=")
			v, _, _ := strings.Cut(rest, ",")
			stats[name], _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "total_reads_processed:"); ok {
			stats[readsStat], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return stats, nil
}

// otlpSink is an OTLP/HTTP collector that answers 200 and counts exports.
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
// stop is called; stop returns the polls answered 200.
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
