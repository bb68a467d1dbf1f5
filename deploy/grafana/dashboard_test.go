// Package grafana holds the Grafana dashboard (switchyard.json). Its test
// keeps the dashboard honest: every PromQL expression parses, and every
// metric it names is one the gateway's /metrics exports, so renaming a
// metric breaks this test, not the dashboard.
package grafana

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/switchyard/switchyard/daemon"
	"github.com/switchyard/switchyard/mock"
)

// exprs returns every PromQL expression of the dashboard: panel targets,
// template variable queries and annotations, with where each is.
func exprs(t *testing.T) map[string]string {
	b, err := os.ReadFile("switchyard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
		Annotations struct {
			List []struct {
				Name string `json:"name"`
				Expr string `json:"expr"`
			} `json:"list"`
		} `json:"annotations"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("switchyard.json: %v", err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("panel %q target %d", p.Title, i)] = tg.Expr
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((\w+), *\w+\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(metric, label)", v.Name, v.Definition)
			continue
		}
		out["variable "+v.Name] = m[1]
	}
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			out["annotation "+a.Name] = a.Expr
		}
	}
	return out
}

// grafanaVars replaces Grafana's variables with values PromQL accepts.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h",
	"$target", ".*", "$key", ".*", "$job", ".*",
)

// metricsFamilies starts a gateway, sends requests that make every kind of
// series appear (success with usage, a failover, a 429 park, a reload),
// and returns the metric names its /metrics exports (a histogram's
// _bucket, _sum and _count).
func metricsFamilies(t *testing.T) map[string]bool {
	ok, _ := mock.Start("127.0.0.1:0", mock.Options{Name: "ok", APIKey: "sk-x"})
	t.Cleanup(func() { _ = ok.Close() })
	bad, _ := mock.Start("127.0.0.1:0", mock.Options{Name: "bad", APIKey: "sk-x"})
	t.Cleanup(func() { _ = bad.Close() })
	cfg := fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
log: {level: warn, access_log: false}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_keys: [bad, ok]}
targets:
  - {virtual_key: ok, provider: openai, base_url: %s, api_key: sk-x, prices: {"*": {input: 1, output: 2}}}
  - virtual_key: bad
    provider: openai
    base_url: %s
    api_key: sk-x
    retry: {attempts: 1}
    limits: {requests_per_minute: 1}
    prices: {"*": {input: 1, output: 2}}
auth:
  keys:
    - {name: acme, key: sk-client-0001, limits: {requests_per_minute: 3}}
`, ok.BaseURL(), bad.BaseURL())
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(path, "127.0.0.1:0", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = d.Shutdown(ctx)
		<-served
	})
	base := "http://" + d.Addr().String()
	send := func() {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[]}`))
		req.Header.Set("Authorization", "Bearer sk-client-0001")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	bad.Fail(mock.Failure{Status: 503, Count: 1})
	send() // bad fails over to ok: attempts, failovers, tokens, spend
	send() // bad has no quota left: skipped
	send()
	send() // acme's third request a minute was the last: rejected
	if err := os.WriteFile(path, []byte(cfg+"\n# changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.Reload()

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" {
			continue
		}
		switch f[3] {
		case "histogram":
			names[f[2]+"_bucket"], names[f[2]+"_sum"], names[f[2]+"_count"] = true, true, true
		case "summary":
			names[f[2]], names[f[2]+"_sum"], names[f[2]+"_count"] = true, true, true
		default:
			names[f[2]] = true
		}
	}
	return names
}

func TestDashboardMetricsExist(t *testing.T) {
	exported := metricsFamilies(t)
	if !exported["switchyard_failovers_total"] || !exported["switchyard_upstream_duration_seconds_bucket"] {
		t.Fatalf("the scrape lacks series the requests should have made: %v", exported)
	}
	es := exprs(t)
	if len(es) < 15 {
		t.Fatalf("only %d expressions found in the dashboard", len(es))
	}
	p := parser.NewParser(parser.Options{})
	used := map[string]bool{}
	for where, e := range es {
		expr, err := p.ParseExpr(grafanaVars.Replace(e))
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", where, e, err)
			continue
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := vs.Name
			if name == "" {
				t.Errorf("%s: a selector without a metric name: %s", where, vs)
				return nil
			}
			used[name] = true
			if !exported[name] {
				t.Errorf("%s: %s is not exported by /metrics", where, name)
			}
			return nil
		})
	}
	// The families the dashboard promises to chart.
	for _, want := range []string{"switchyard_requests_total", "switchyard_upstream_attempts_total", "switchyard_failovers_total",
		"switchyard_circuit_state", "switchyard_upstream_duration_seconds_bucket", "switchyard_tokens_total",
		"switchyard_spend_usd_total", "switchyard_quota_rejections_total"} {
		if !used[want] {
			t.Errorf("the dashboard charts no %s", want)
		}
	}
}
