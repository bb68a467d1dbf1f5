package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/bench/load"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/mock"
)

// TestGeneratedConfigsLoad keeps every generated config in step with the
// config package: a schema change fails here instead of turning a row into
// "skipped: config not accepted".
func TestGeneratedConfigsLoad(t *testing.T) {
	const up, up2 = "http://127.0.0.1:9001/v1", "http://127.0.0.1:9002/v1"
	one := gw{targets: []string{up}}
	with := func(f func(*gw)) gw { c := one; f(&c); return c }
	cases := map[string]gw{
		"10k":       with(func(c *gw) { c.rules = 10000 }),
		"reduce":    with(func(c *gw) { c.reduce = true }),
		"keys":      with(func(c *gw) { c.yaml = clientKeysYAML }),
		"failover":  {targets: []string{up, up2}, targetYAML: "    circuit_breaker:\n      failure_threshold: 1000000000\n"},
		"limits":    with(func(c *gw) { c.yaml = limitsYAML }),
		"redis":     with(func(c *gw) { c.yaml = fmt.Sprintf(redisYAML, "127.0.0.1:6390") }),
		"residency": with(func(c *gw) { c.yaml, c.targetYAML = residencyYAML, residencyTargetYAML }),
		"audit": with(func(c *gw) {
			c.yaml = fmt.Sprintf(auditYAML, t.TempDir(), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
		}),
		"tracing": with(func(c *gw) { c.yaml = fmt.Sprintf(tracingYAML, "127.0.0.1:4318") }),
		"admin":   with(func(c *gw) { c.yaml = fmt.Sprintf(adminYAML, "127.0.0.1:9090") }),
		"streams": with(func(c *gw) { c.targetYAML = "    concurrency:\n      max_concurrency: 5100\n" }),
	}
	parsed := map[string]*config.Config{}
	for name, c := range cases {
		cfg, err := config.Parse(name+".yaml", []byte(gatewayYAML("127.0.0.1:18080", c)), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, gatewayYAML("127.0.0.1:18080", c))
			continue
		}
		parsed[name] = cfg
	}
	if c := parsed["10k"]; c == nil || len(c.Strategy.Conditions) != 10000 || c.Strategy.Conditions[9999].Value != ruleModel(9999) ||
		!strings.Contains(string(manyRulesBody(10000)), `"model":"model-09999"`) || c.Server.Listen != "127.0.0.1:18080" ||
		c.Log.AccessLog || c.Targets[0].BaseURL != up || c.Targets[0].APIKey != upstreamAPIKey || c.Server.ReduceMemoryUsage {
		t.Errorf("10k config: %+v", c)
	}
	if c := parsed["reduce"]; c == nil || !c.Server.ReduceMemoryUsage || len(c.Strategy.Conditions) != 1 {
		t.Errorf("reduce_memory_usage config: %+v", c)
	}
	// The key every row presents is the one configured: the keyed rows
	// measure accepted requests, not 401s.
	if c := parsed["keys"]; c == nil || len(c.Auth.Keys) != 1 || c.Auth.Keys[0].Digest != sha256.Sum256([]byte(benchClientKey)) ||
		authHeader[0][1] != "Bearer "+benchClientKey {
		t.Errorf("client-keys config: %+v", c)
	}
	if c := parsed["failover"]; c == nil || strings.Join(c.Strategy.Conditions[0].Chain(), ",") != "primary,secondary" ||
		c.Targets[0].CircuitBreaker.FailureThreshold != 1_000_000_000 || c.Targets[1].CircuitBreaker.FailureThreshold != config.DefaultFailureThreshold {
		t.Errorf("failover config: %+v", c)
	}
}

// A binary that refuses a row's config (a feature not merged yet) makes
// that row fail with "config not accepted" and the validator's reason,
// and is never started with it.
func TestConfigNotAcceptedSkips(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "switchyard")
	script := "#!/bin/sh\nif [ \"$1\" = validate ]; then echo \"$3:18:1: tracing: unknown key\"; exit 1; fi\necho started >" + dir + "/started\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b := &bench{ctx: context.Background(), tmp: dir, syBin: bin}
	_, err := b.switchyard(gw{targets: []string{"http://127.0.0.1:9/v1"}, yaml: "tracing:\n  sample_ratio: 0.01\n"})
	if err == nil || err.Error() != "config not accepted: 18:1: tracing: unknown key" {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
		t.Fatal("the gateway was started with a config it refused")
	}
}

// The Redis row's counter: a redis-server started the way the row starts
// it answers INFO commandstats, and the calls of each command show.
func TestRedisCommandStats(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server on PATH")
	}
	r, err := (&bench{ctx: context.Background()}).startRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer r.stop()
	c, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("SET k v\r\nSET k w\r\nGET k\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for got := ""; len(got) < len("+OK\r\n+OK\r\n$1\r\nw\r\n"); {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got += string(buf[:n])
	}
	stats, err := redisCommandStats(r.addr)
	if err != nil || stats["set"] != 2 || stats["get"] != 1 || stats[readsStat] < 1 {
		t.Fatalf("commandstats %v %v, want set=2 get=1 and the socket reads", stats, err)
	}
	if got := perCommand(map[string]int64{"get": 30, "evalsha": 10}, 10); got != "4.00 (get 3.00, evalsha 1.00)" {
		t.Errorf("perCommand = %q", got)
	}
}

func TestStartPinned(t *testing.T) {
	ctx := context.Background()
	allowed, err := allowedCPUs()
	if err != nil || len(allowed) == 0 {
		t.Fatalf("allowed CPUs %v %v", allowed, err)
	}
	cpu := allowed[len(allowed)-1]
	p, err := start(ctx, "sh", []int{cpu}, nil, true, "/bin/sh", "-c", "echo listening http://127.0.0.1:9; echo oops >&2; exec sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	st, _ := os.ReadFile("/proc/" + strconv.Itoa(p.pid()) + "/status")
	pinned := "Cpus_allowed_list:\t" + strconv.Itoa(cpu) + "\n"
	if p.addr != "127.0.0.1:9" || !strings.Contains(string(st), pinned) {
		t.Fatalf("addr %q, not pinned to CPU %d:\n%s", p.addr, cpu, st)
	}
	if memStatus(p.pid(), "VmHWM") <= 0 {
		t.Fatal("no VmHWM")
	}
	// The pinning does not leak: a child started without CPUs afterwards
	// (from whichever thread) may run anywhere.
	for range 20 * min(len(allowed)-1, 1) {
		q, err := start(ctx, "sh", nil, nil, false, "/bin/sh", "-c", "exec sleep 30")
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(q.pid()) + "/status")
		q.stop()
		if strings.Contains(string(st), pinned) {
			t.Fatal("an unpinned child inherited the pinning")
		}
	}
	for deadline := time.Now().Add(5 * time.Second); p.lastLines(1) != "oops" && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if p.lastLines(1) != "oops" {
		t.Fatalf("stderr not collected: %q", p.lastLines(1))
	}
	if p.stop(); !p.exited() {
		t.Fatal("stop did not end the process")
	}
	if _, err := start(ctx, "sh", nil, nil, true, "/bin/sh", "-c", "echo hello; sleep 30"); err == nil || !strings.Contains(err.Error(), `first line "hello"`) {
		t.Fatalf("wrong first line accepted: %v", err)
	}
	if _, err := start(ctx, "sh", nil, nil, true, "/bin/sh", "-c", "exit 3"); !errors.Is(err, errExited) {
		t.Fatalf("exited process: %v", err)
	}
}

// readUsage counts this process's own write(2) calls and context switches,
// and reads the allocations from its Prometheus page.
func TestReadUsage(t *testing.T) {
	page := "# HELP x\ngo_memstats_mallocs_total_extra 5\ngo_memstats_mallocs_total 12345\nother{a=\"b\"} 1\n"
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString(page) }}
	go func() { _ = s.Serve(ln) }()
	defer s.Shutdown()
	url := "http://" + ln.Addr().String() + "/metrics"
	if _, err := scrape(url, "missing_total"); err == nil {
		t.Fatal("found a missing sample")
	}
	f, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u0, err := readUsage(os.Getpid(), url)
	if err != nil || u0.mallocs != 12345 {
		t.Fatalf("%+v %v", u0, err)
	}
	for range 100 {
		_, _ = f.Write([]byte("x"))
	}
	time.Sleep(10 * time.Millisecond) // a voluntary context switch at least
	u1, err := readUsage(os.Getpid(), "")
	if d := u1.plus(u0, -1); err != nil || d.writes < 100 || d.ctxSwitches <= 0 || d.reads < 0 || d.cpu < 0 {
		t.Fatalf("usage %+v then %+v: %v", u0, u1, err)
	}
}

// openIdle holds connections that each completed the request given, and
// alive tells open ones from those the server closed.
func TestIdleConns(t *testing.T) {
	m, err := mock.Start("127.0.0.1:0", mock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	chat := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(chatBody), chatBody)
	conns, err := openIdle(m.Addr(), chat, 50)
	defer closeAll(conns)
	if err != nil || len(conns) != 50 || alive(conns) != 50 || m.Stats().ByPath[chatPath] != 50 {
		t.Fatalf("opened %d, alive %d, mock saw %d: %v", len(conns), alive(conns), m.Stats().ByPath[chatPath], err)
	}
	_ = m.Close() // the server closes its side
	time.Sleep(50 * time.Millisecond)
	if a := alive(conns); a != 0 {
		t.Fatalf("%d connections alive after the server closed", a)
	}
}

// TestTargets feeds hand-made rows through the tables and pass/miss lines.
func TestTargets(t *testing.T) {
	res := func(n int64, lat time.Duration) *load.Result {
		h := load.NewHistogram()
		for range n {
			h.Record(lat)
		}
		return &load.Result{Completed: n, Latency: h, Elapsed: time.Second}
	}
	bare := &row{name: "bare", res: res(1000, 100*time.Microsecond), used: true, use: usage{cpu: 0.010, mallocs: 5000}, rss: 10 << 20, peak: 12 << 20}
	good := &row{name: "good", res: res(950, 150*time.Microsecond), used: true, use: usage{cpu: 0.0105, reads: 1900}, bare: bare, direct: bare}
	slow := &row{name: "slow", res: res(800, 150*time.Microsecond), used: true, use: usage{cpu: 0.02}, bare: bare}
	good.cost = &cost{without: bare, maxCPU: targetFeatureCPU}
	slow.cost = &cost{without: good, minTput: targetRedisThroughput}
	free := &row{name: "free", res: res(1000, 100*time.Microsecond), used: true, use: usage{cpu: 0.010}, cost: &cost{without: bare}}
	b := &bench{rows: []*row{bare, good, slow, free, {name: "gone", skipped: "gateway not built", bare: bare}},
		p99Half: map[string]time.Duration{"good": 80 * time.Microsecond, "slow": 300 * time.Microsecond}}
	md := b.markdown("")
	for _, want := range []string{
		"| vs bare proxy | throughput (target ≥ 0.90×) | CPU/req (target ≤ 1.15×) | p99 added at half saturation (target ≤ 100 µs) |\n|---|--:|--:|--:|\n",
		"| good vs bare | 0.95× pass | 1.11× pass | +80 µs pass |",
		"| slow vs bare | 0.80× **miss** | 2.50× **miss** | +300 µs **miss** |",
		"| gone vs bare | n/a | n/a | not measured |",
		"| bare | 1000 | 100 µs | 100 µs | — | — | 10.0 µs | 10.0 MiB / 12.0 MiB | 5.0 | 0.00 / 0.00 / 0.00 | 0 |  |",
		"| good | 950 | 150 µs | 150 µs | +50 µs | +50 µs | 11.1 µs | — | 0.0 | 2.00 / 0.00 / 0.00 | 0 |  |",
		"| slow | 800 | 150 µs | 150 µs | — | — | 25.0 µs | — | 0.0 | 0.00 / 0.00 / 0.00 | 0 |  |",
		"| gone | skipped: gateway not built |",
		"| good vs bare | 0.95× | 1.11× **miss** (target ≤ 1.05×) |",
		"| slow vs good | 0.84× **miss** (target ≥ 0.85×) | 2.26× |",
		"| free vs bare | 1.00× | 1.00× |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
	// Three decimals next to the target, and the side of it is kept.
	if got := check(1.1497, targetCPU, false); got != "1.150× pass" {
		t.Errorf("a ratio just under the target printed %q", got)
	}
	if got := check(1.1503, targetCPU, false); got != "1.150× **miss**" {
		t.Errorf("a ratio just over the target printed %q", got)
	}
}

// TestReadCallgrind: self costs by function from the callgrind format,
// compressed names resolved, a call's inclusive cost (the line after
// calls=) not counted, recursion marks merged; they sum to the summary.
func TestReadCallgrind(t *testing.T) {
	dump := `# callgrind format
version: 1
positions: line
events: Ir
summary: 1000

ob=(1) /bin/x
fl=(1) a.go
fn=(1) main.a
10 100
+2 50
cfl=(2) b.go
cfn=(2) main.b
calls=3 7
* 800
fl=(2)
fn=(2)
7 700
fn=(3) main.b'2
7 100
cfn=(1)
calls=1 10
7 999
fn=(4) main.c
* 50
`
	file := filepath.Join(t.TempDir(), "cg.out")
	if err := os.WriteFile(file, []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	fns, total, err := readCallgrind(nil, file, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"main.a": 15, "main.b": 80, "main.c": 5}
	if total != 100 || len(fns) != len(want) {
		t.Fatalf("total %v, functions %v; want 100, %v", total, fns, want)
	}
	for k, v := range want {
		if fns[k] != v {
			t.Errorf("%s: %v, want %v", k, fns[k], v)
		}
	}
}
