package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/mock"
)

// proxy is a started proxy under test.
type proxy struct {
	*proc
	metrics string // its Prometheus page
}

func (p *proxy) usage() (usage, error) { return readUsage(p.pid(), p.metrics) }

// place is where a proxy under test runs: alone on its CPU with
// GOMAXPROCS=1, or, while b.unpinned, as users deploy it.
func (b *bench) place() ([]int, []string) {
	if b.unpinned {
		// Every CPU, set explicitly: with none the child would inherit the
		// driver's own pinning (CPU 1 alone) and GOMAXPROCS=1.
		return b.allCPUs, nil
	}
	return b.proxyCPUs, []string{"GOMAXPROCS=1"}
}

// retry makes up to three attempts while the proxy exits at once: a port
// freeAddr picked can be taken by someone else before the proxy binds it.
func retry(start func() (*proxy, error)) (p *proxy, err error) {
	for range 3 {
		if p, err = start(); err == nil || !errors.Is(err, errExited) {
			return p, err
		}
	}
	return nil, err
}

// bare starts a bare proxy to upstream; extra are more flags.
func (b *bench) bare(upstream string, extra ...string) (*proxy, error) {
	return retry(func() (*proxy, error) {
		maddr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		cpus, env := b.place()
		p, err := start(b.ctx, "bareproxy", cpus, env, true, b.bareBin,
			append([]string{"-listen", "127.0.0.1:0", "-upstream", upstream, "-metrics", maddr}, extra...)...)
		if err != nil {
			return nil, err
		}
		if err := waitHTTP(b.ctx, "http://"+maddr+"/metrics", p, 10*time.Second); err != nil {
			p.stop()
			return nil, err
		}
		return &proxy{p, "http://" + maddr + "/metrics"}, nil
	})
}

// gw is a generated Switchyard config and how to run it.
type gw struct {
	targets    []string // base URLs of primary (and secondary, the failover chain)
	targetYAML string   // more YAML for primary
	rules      int      // >1: that many model rules, the request matching the last; else one
	reduce     bool     // server.reduce_memory_usage
	yaml       string   // top-level blocks appended (auth, audit, ...)
	env        []string
	bin        string // default: the switchyard built for the run
	accessLog  bool   // log.access_log: true (lines to the proxy's stderr, a pipe the driver reads)
	provider   string // of the targets; default openai
}

func oneRule(mockAddr string) gw { return gw{targets: []string{mockURL(mockAddr)}} }

func mockURL(addr string) string { return "http://" + addr + "/v1" }

// ruleModel is the model the i-th rule of a many-rule config matches.
func ruleModel(i int) string { return fmt.Sprintf("model-%05d", i) }

// gatewayYAML is c's config listening on addr. Access log off (unless
// c.accessLog) and level warn: the bare proxy logs nothing either.
func gatewayYAML(addr string, c gw) string {
	var y strings.Builder
	fmt.Fprintf(&y, "server:\n  listen: %s\n  reduce_memory_usage: %v\nlog:\n  level: warn\n  access_log: %v\nstrategy:\n  mode: conditional\n  conditions:\n", addr, c.reduce, c.accessLog)
	chain := "target_key: primary"
	if len(c.targets) > 1 {
		chain = "target_keys: [primary, secondary]"
	}
	models := []string{"bench-model"}
	if c.rules > 1 {
		models = make([]string, c.rules)
		for i := range models {
			models[i] = ruleModel(i)
		}
	}
	for _, m := range models {
		fmt.Fprintf(&y, "    - key: model\n      value: %s\n      %s\n", m, chain)
	}
	y.WriteString("targets:\n")
	for i, u := range c.targets {
		fmt.Fprintf(&y, "  - virtual_key: %s\n    provider: %s\n    base_url: %s\n    api_key: %s\n", []string{"primary", "secondary"}[i], cmp.Or(c.provider, "openai"), u, upstreamAPIKey)
		if i == 0 {
			y.WriteString(c.targetYAML)
		}
	}
	return y.String() + c.yaml
}

// switchyard starts Switchyard with c. A config the binary refuses (a feature not
// merged yet) fails with "config not accepted" and the reason, unstarted.
func (b *bench) switchyard(c gw) (*proxy, error) {
	if c.bin == "" && b.syErr != "" {
		return nil, fmt.Errorf("%s", b.syErr)
	}
	bin := cmp.Or(c.bin, b.syBin)
	return retry(func() (*proxy, error) {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		b.configs++
		file := filepath.Join(b.tmp, "switchyard-"+strconv.Itoa(b.configs)+".yaml")
		if err := os.WriteFile(file, []byte(gatewayYAML(addr, c)), 0o600); err != nil {
			return nil, err
		}
		check := exec.CommandContext(b.ctx, bin, "validate", "-config", file)
		check.Env = append(os.Environ(), c.env...)
		if out, err := check.CombinedOutput(); err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			return nil, fmt.Errorf("config not accepted: %s", strings.ReplaceAll(strings.Join(lines[max(0, len(lines)-2):], " | "), file+":", ""))
		}
		cpus, env := b.place()
		p, err := start(b.ctx, "switchyard", cpus, append(env, c.env...), false, bin, "serve", "-config", file, "-listen", addr)
		if err != nil {
			return nil, err
		}
		p.addr = addr
		if err := waitHTTP(b.ctx, "http://"+addr+"/readyz", p, 60*time.Second); err != nil {
			p.stop()
			return nil, err
		}
		return &proxy{p, "http://" + addr + "/metrics"}, nil
	})
}

// mockCall sends a control request (/_mock/fail, /_mock/reset) to a mock.
func mockCall(addr, path string) error {
	status, body, err := fasthttp.Post(nil, "http://"+addr+path, nil)
	if err == nil && status != 200 {
		err = fmt.Errorf("POST %s: status %d: %s", path, status, body)
	}
	return err
}

func mockStats(addr string) (st mock.Stats, err error) {
	status, body, err := fasthttp.GetTimeout(nil, "http://"+addr+"/_mock/stats", 5*time.Second)
	if err == nil && status != 200 {
		err = fmt.Errorf("stats: status %d", status)
	}
	if err == nil {
		err = json.Unmarshal(body, &st)
	}
	return st, err
}
