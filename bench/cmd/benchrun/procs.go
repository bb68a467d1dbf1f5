package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/bench/harness"
	"github.com/switchyard/switchyard/mock"
)

func (b *bench) startMocks() error {
	start := func(name string, extra ...string) (*harness.Proc, error) {
		args := append([]string{"-listen", "127.0.0.1:0", "-name", name}, extra...)
		return harness.Start(b.ctx, b.mockBin, args, harness.StartOptions{
			Name: "mock " + name, CPUs: b.sideCPUs, Env: []string{"GOMAXPROCS=1"}, WaitListening: true,
		})
	}
	var err error
	if b.primary, err = start("primary"); err != nil {
		return err
	}
	if b.secondary, err = start("secondary"); err != nil {
		return err
	}
	if b.streamer, err = start("stream", "-stream-events", strconv.Itoa(b.o.streamEvents),
		"-stream-interval", b.o.streamInterval.String()); err != nil {
		return err
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + b.primary.Addr + chatPath)
	req.Header.SetMethod("POST")
	req.SetBody(chatBody)
	if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil || resp.StatusCode() != 200 {
		return fmt.Errorf("mock does not answer: %v (status %d)", err, resp.StatusCode())
	}
	b.respBytes = len(resp.Body())
	return nil
}

func (b *bench) stopMocks() {
	for _, p := range []*harness.Proc{b.primary, b.secondary, b.streamer} {
		if p != nil {
			p.Stop()
		}
	}
}

// placeCPUs and placeEnv place a proxy under test: alone on its CPU with
// GOMAXPROCS=1, or, while b.unpinned, as a user deploys it: every CPU (set
// explicitly: with none it would inherit the driver's one) and the default
// GOMAXPROCS.
func (b *bench) placeCPUs() []int {
	if b.unpinned {
		return b.allCPUs
	}
	return b.proxyCPUs
}

func (b *bench) placeEnv() []string {
	if b.unpinned {
		return nil
	}
	return []string{"GOMAXPROCS=1"}
}

// proxy is a started proxy under test.
type proxy struct {
	proc       *harness.Proc
	addr       string
	metricsURL string
}

func (p *proxy) stop() {
	if p != nil && p.proc != nil {
		p.proc.Stop()
	}
}

// startBare starts a bare proxy to upstream (see retry).
func (b *bench) startBare(upstream string, extra ...string) (*proxy, error) {
	return retry(func() (*proxy, error) { return b.startBareOnce(upstream, extra...) })
}

// startBareOnce starts a bare proxy to upstream; extra are more flags
// (-reduce-memory).
func (b *bench) startBareOnce(upstream string, extra ...string) (*proxy, error) {
	maddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p, err := harness.Start(b.ctx, b.bareBin, append([]string{"-listen", "127.0.0.1:0", "-upstream", upstream, "-metrics", maddr}, extra...),
		harness.StartOptions{Name: "bareproxy", CPUs: b.placeCPUs(), Env: b.placeEnv(), WaitListening: true})
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(b.ctx, "http://"+maddr+"/metrics", p, 10*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return &proxy{proc: p, addr: p.Addr, metricsURL: "http://" + maddr + "/metrics"}, nil
}

// gwTarget is one target of a generated Switchyard config.
type gwTarget struct {
	name, baseURL string
	// failureThreshold overrides the breaker's (0: default).
	failureThreshold int
	// maxConcurrency overrides concurrency.max_concurrency (0: default).
	maxConcurrency int
	// extra is more YAML for the target, each line indented four spaces.
	extra string
}

// startSwitchyard writes a config routing model-named rules and starts the
// gateway on a free port. rules are (model, chain) pairs in order;
// reduceMemory is server.reduce_memory_usage.
func (b *bench) startSwitchyard(name string, reduceMemory bool, targets []gwTarget, rules [][2]string) (*proxy, error) {
	if b.syErr != "" {
		return nil, fmt.Errorf("%s", b.syErr)
	}
	return b.startSwitchyardProc(gwProc{bin: b.syBin}, name, reduceMemory, targets, rules)
}

// gwProc says which Switchyard binary to start, with what extra
// environment.
type gwProc struct {
	bin string
	env []string
	// appendYAML is appended to the generated config (a top-level block
	// such as auth).
	appendYAML string
}

// startSwitchyardProc is startSwitchyard for the binary and environment gp.
func (b *bench) startSwitchyardProc(gp gwProc, name string, reduceMemory bool, targets []gwTarget, rules [][2]string) (*proxy, error) {
	return retry(func() (*proxy, error) { return b.startSwitchyardOnce(gp, name, reduceMemory, targets, rules) })
}

// retry makes up to three attempts at start while the proxy exits at once:
// a port picked by freeAddr can be taken by someone else before the proxy
// binds it. A proxy that runs but never gets ready is not retried.
func retry(start func() (*proxy, error)) (p *proxy, err error) {
	for range 3 {
		if p, err = start(); err == nil || !errors.Is(err, errExited) {
			return p, err
		}
	}
	return nil, err
}

// errExited marks a proxy that exited before it was ready.
var errExited = errors.New("exited before ready")

func (b *bench) startSwitchyardOnce(gp gwProc, name string, reduceMemory bool, targets []gwTarget, rules [][2]string) (*proxy, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	yaml := gatewayYAML(addr, reduceMemory, targets, rules) + gp.appendYAML
	file := filepath.Join(b.tmp, fileName(name)+".yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		return nil, err
	}
	// A row whose config this binary does not know (a feature not merged
	// yet) is skipped with the reason, not failed.
	check := exec.CommandContext(b.ctx, gp.bin, "validate", "-config", file)
	check.Env = append(os.Environ(), gp.env...)
	if out, err := check.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("config not accepted: %s", strings.ReplaceAll(lastLines(string(out), 2), file+":", ""))
	}
	p, err := harness.Start(b.ctx, gp.bin, []string{"serve", "-config", file, "-listen", addr},
		harness.StartOptions{Name: "switchyard", CPUs: b.placeCPUs(), Env: append(b.placeEnv(), gp.env...)})
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(b.ctx, "http://"+addr+"/readyz", p, 60*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return &proxy{proc: p, addr: addr, metricsURL: "http://" + addr + "/metrics"}, nil
}

// gatewayYAML is a Switchyard config listening on addr with targets and
// model rules ((model, comma-separated chain) pairs, in order), and
// server.reduce_memory_usage set to reduceMemory. Access log off and level
// warn: the bare proxy logs nothing either.
func gatewayYAML(addr string, reduceMemory bool, targets []gwTarget, rules [][2]string) string {
	var y strings.Builder
	fmt.Fprintf(&y, "server:\n  listen: %s\n  reduce_memory_usage: %v\nlog:\n  level: warn\n  access_log: false\nstrategy:\n  mode: conditional\n  conditions:\n", addr, reduceMemory)
	for _, r := range rules {
		chain := strings.Split(r[1], ",")
		if len(chain) == 1 {
			fmt.Fprintf(&y, "    - key: model\n      value: %s\n      target_key: %s\n", r[0], chain[0])
		} else {
			fmt.Fprintf(&y, "    - key: model\n      value: %s\n      target_keys: [%s]\n", r[0], strings.Join(chain, ", "))
		}
	}
	y.WriteString("targets:\n")
	for _, t := range targets {
		fmt.Fprintf(&y, "  - virtual_key: %s\n    provider: openai\n    base_url: %s\n    api_key: %s\n", t.name, t.baseURL, upstreamAPIKey)
		if t.failureThreshold > 0 {
			fmt.Fprintf(&y, "    circuit_breaker:\n      failure_threshold: %d\n", t.failureThreshold)
		}
		if t.maxConcurrency > 0 {
			fmt.Fprintf(&y, "    concurrency:\n      max_concurrency: %d\n", t.maxConcurrency)
		}
		y.WriteString(t.extra)
	}
	return y.String()
}

func (b *bench) mockURL(p *harness.Proc) string { return "http://" + p.Addr + "/v1" }

// clientKeysYAML makes the gateway require the key every scenario's
// authHeader presents (README, Client keys), so the keyed row pays for
// reading, hashing and looking it up and for the key's metrics.
const clientKeysYAML = "auth:\n  keys:\n    - name: bench\n      key: " + benchClientKey + "\n"

// oneRuleKeys is oneRule with client keys required.
func (b *bench) oneRuleKeys(upstream *harness.Proc) (*proxy, error) {
	return b.feature("1-rule-keys", gwProc{appendYAML: clientKeysYAML}, gwTarget{name: "primary", baseURL: b.mockURL(upstream)})
}

// feature starts the 1-rule Switchyard to target t with gp's extra YAML
// and environment.
func (b *bench) feature(name string, gp gwProc, t gwTarget) (*proxy, error) {
	if b.syErr != "" {
		return nil, fmt.Errorf("%s", b.syErr)
	}
	gp.bin = b.syBin
	return b.startSwitchyardProc(gp, name, false, []gwTarget{t}, oneRuleRules)
}

func (b *bench) oneRule(upstream *harness.Proc) (*proxy, error) {
	return b.oneRuleWith(upstream, false)
}

// oneRuleWith is oneRule with server.reduce_memory_usage set to
// reduceMemory (the idle-connection measurement runs both ways).
func (b *bench) oneRuleWith(upstream *harness.Proc, reduceMemory bool) (*proxy, error) {
	return b.oneRuleURL(b.mockURL(upstream), reduceMemory)
}

// oneRuleURL is oneRuleWith for an upstream given by its base URL.
func (b *bench) oneRuleURL(baseURL string, reduceMemory bool) (*proxy, error) {
	name := "1-rule"
	if reduceMemory {
		name += "-reduce-memory"
	}
	return b.startSwitchyard(name, reduceMemory, []gwTarget{{name: "primary", baseURL: baseURL}}, oneRuleRules)
}

// oneRuleRules is the rule set of every 1-rule Switchyard.
var oneRuleRules = [][2]string{{"bench-model", "primary"}}

// manyRulesURL starts Switchyard with b.o.rules model rules to baseURL and
// returns it with a body matching the last rule.
func (b *bench) manyRulesURL(baseURL string) (*proxy, []byte, error) {
	rules := make([][2]string, b.o.rules)
	for i := range rules {
		rules[i] = [2]string{fmt.Sprintf("model-%05d", i), "primary"}
	}
	last := rules[len(rules)-1][0]
	body := []byte(strings.Replace(string(chatBody), "bench-model", last, 1))
	p, err := b.startSwitchyard("many-rules", false, []gwTarget{{name: "primary", baseURL: baseURL}}, rules)
	return p, body, err
}

func (b *bench) failover(threshold int) (*proxy, error) {
	return b.startSwitchyard(fmt.Sprintf("failover-%d", threshold), false, []gwTarget{
		{name: "primary", baseURL: b.mockURL(b.primary), failureThreshold: threshold},
		{name: "secondary", baseURL: b.mockURL(b.secondary)},
	}, [][2]string{{"bench-model", "primary,secondary"}})
}

// freeAddr returns a 127.0.0.1 address with a port free right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitHTTP polls url until it answers 200, p exits, or timeout.
func waitHTTP(ctx context.Context, url string, p *harness.Proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		status, _, err := fasthttp.GetTimeout(nil, url, time.Second)
		if err == nil && status == 200 {
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("%s %w: %s", p.Name, errExited, lastLines(p.Log(), 5))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not ready at %s after %v (status %d, %v): %s", p.Name, url, timeout, status, err, lastLines(p.Log(), 5))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mockCall(addr, method, path string) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + path)
	req.Header.SetMethod(method)
	if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil {
		return err
	}
	if resp.StatusCode() != 200 {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode(), resp.Body())
	}
	return nil
}

func mockStats(addr string) (mock.Stats, error) {
	var st mock.Stats
	status, body, err := fasthttp.GetTimeout(nil, "http://"+addr+"/_mock/stats", 5*time.Second)
	if err != nil {
		return st, err
	}
	if status != 200 {
		return st, fmt.Errorf("stats: status %d", status)
	}
	return st, json.Unmarshal(body, &st)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// fileName is name with everything but letters, digits, '-', '_' and '.' dropped or
// made a '-'.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		case r == ' ' || r == '/' || r == '+':
			return '-'
		}
		return -1
	}, name)
}
