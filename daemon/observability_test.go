package daemon

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/mock"
)

// TestObservabilityAfterTraffic checks docs/operations.md, Metrics and logs end to end, through the
// real server: after a success, a stream, a failover, an open circuit, a
// 429 and a reload, /metrics carries every series docs/operations.md, Metrics and logs and
// telemetry/METRICS.md promise, and each access line carries every field
// docs/operations.md, Metrics and logs lists (time to first byte on streams only). No credential
// appears in either.
func TestObservabilityAfterTraffic(t *testing.T) {
	good := startMock(t, mock.Options{Name: "good", StreamEvents: 3})
	bad := startMock(t, mock.Options{Name: "bad", FailRate: 1, FailStatus: 503})
	// lim's 429 asks for Retry-After: 60 (the longest park, MaxPark): with
	// no Retry-After the park would be DefaultPark (5 s), and under load
	// (-race, shared cores) the scrape below could come after it ended,
	// reading switchyard_target_parked{target="lim"} 0.
	lim := startMock(t, mock.Options{Name: "lim"})
	lim.Fail(mock.Failure{Status: 429, RetryAfter: 60})
	const (
		keyA   = "sk-FAKEKEY-good-7f3a9c"
		keyBad = "sk-FAKEKEY-bad-51e0d2"
		keyLim = "sk-FAKEKEY-lim-c4b8e1"
	)
	path := cfgPath(t)
	writeFile(t, path, fmt.Sprintf(`
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: a}
    - {key: model, value: f, target_keys: [bad, a]}
    - {key: model, value: r, target_keys: [lim, a]}
targets:
  - {virtual_key: a, provider: openai, base_url: %q, api_key: %s, models: [m, f, r]}
  - virtual_key: bad
    provider: openai
    base_url: %q
    api_key: %s
    circuit_breaker: {failure_threshold: 1, timeout: 60s}
  - {virtual_key: lim, provider: openai, base_url: %q, api_key: %s}
`, good.BaseURL(), keyA, bad.BaseURL(), keyBad, lim.BaseURL(), keyLim))
	logs := &syncBuffer{}
	d, base := startDaemon(t, path, logs)
	c := newClient()

	// One request with a client-chosen id, then the rest.
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[]}`))
	req.Header.Set("X-Request-Id", "client-id-1")
	req.Header.Set("Authorization", "Bearer sk-FAKEKEY-client-0a1b2c")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, tc := range []struct {
		model  string
		stream bool
		status int
		target string
	}{
		{"m", true, 200, "a"},  // stream: ttfb
		{"f", false, 200, "a"}, // bad answers 503 (opens its circuit), a serves
		{"f", false, 200, "a"}, // bad skipped: circuit open
		{"r", false, 200, "a"}, // lim answers 429 (parked), a serves
		{"nope", false, 404, ""},
	} {
		a, err := chat(c, base, tc.model, tc.stream)
		if err != nil || a.status != tc.status || a.target != tc.target {
			t.Fatalf("%s: status %d target %q err %v; want %d %q", tc.model, a.status, a.target, err, tc.status, tc.target)
		}
	}
	if r := d.Reload(); r != ReloadUnchanged {
		t.Fatalf("reload: %s", r)
	}
	// The stream's line comes when its writer ends, after the client read
	// the last byte; allow a loaded machine time for it (the count must
	// still be exactly six).
	waitFor(t, 10*time.Second, "six access lines", func() bool {
		return strings.Count(logs.String(), `"message":"request"`) == 6
	})

	_, metrics := getWith(t, c, base+"/metrics")
	for _, series := range []string{
		// requests by surface and status
		`switchyard_requests_total{surface="chat",status="200"} 5`,
		`switchyard_requests_total{surface="chat",status="404"} 1`,
		// upstream attempts by target and outcome
		`switchyard_upstream_attempts_total{target="a",outcome="ok"} 5`,
		`switchyard_upstream_attempts_total{target="bad",outcome="server"} 1`,
		`switchyard_upstream_attempts_total{target="lim",outcome="rate_limited"} 1`,
		// latency histograms by target
		`switchyard_upstream_duration_seconds_bucket{target="a",le="+Inf"} 5`,
		`switchyard_upstream_duration_seconds_count{target="bad"} 1`,
		`switchyard_upstream_duration_seconds_sum{target="lim"} `,
		// failovers, skips, streams
		`switchyard_failovers_total{target="bad",reason="server"} 1`,
		`switchyard_failovers_total{target="bad",reason="circuit_open"} 1`,
		`switchyard_failovers_total{target="lim",reason="rate_limited"} 1`,
		`switchyard_skips_total{target="bad",reason="circuit_open"} 1`,
		`switchyard_streams_total{target="a",outcome="ok"} 1`,
		// circuit state and parks by target
		`switchyard_circuit_state{target="bad"} 2`,
		`switchyard_circuit_state{target="a"} 0`,
		`switchyard_parks_total{target="lim"} 1`,
		`switchyard_parks_total{target="a"} 0`,
		`switchyard_target_parked{target="lim"} 1`,
		// queue depth and slots
		`switchyard_queue_depth{target="a"} 0`,
		`switchyard_inflight{target="a"} 0`,
		// config reloads by result, config hash
		`switchyard_config_reloads_total{result="unchanged"} 1`,
		`switchyard_config_reloads_total{result="success"} 0`,
		`switchyard_config_reloads_total{result="failure"} 0`,
		`switchyard_config_info{hash="` + d.hash[:12] + `"} 1`,
		`switchyard_config_last_reload_success 1`,
		`switchyard_config_last_reload_timestamp_seconds `,
		// no bug hit
		`switchyard_panics_total 0`,
	} {
		if !strings.Contains("\n"+metrics, "\n"+series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}

	// Access lines: every docs/operations.md, Metrics and logs field, ttfb on the stream only.
	type line struct {
		RequestID string   `json:"request_id"`
		Surface   string   `json:"surface"`
		Model     string   `json:"model"`
		Rule      string   `json:"rule"`
		Chain     []string `json:"chain"`
		Target    string   `json:"target"`
		Attempts  *int     `json:"attempts"`
		Status    int      `json:"status"`
		Latency   *float64 `json:"latency_ms"`
		TTFB      *float64 `json:"ttfb_ms"`
		Stream    bool     `json:"stream"`
	}
	var lines []line
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"message":"request"`) {
			continue
		}
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("access line is not JSON: %v: %s", err, sc.Text())
		}
		lines = append(lines, l)
	}
	if len(lines) != 6 {
		t.Fatalf("%d access lines, want 6", len(lines))
	}
	generated := regexp.MustCompile(`^[0-9a-f]+-[0-9a-f]+$`)
	want := []struct {
		id, model, rule, chain, target string
		attempts, status               int
		stream                         bool
	}{
		{"client-id-1", "m", "0", "a", "a", 1, 200, false},
		{"", "m", "0", "a", "a", 1, 200, true},
		{"", "f", "1", "bad,a", "a", 2, 200, false},
		{"", "f", "1", "bad,a", "a", 1, 200, false},
		{"", "r", "2", "lim,a", "a", 2, 200, false},
		{"", "nope", "fallback", "", "", 0, 404, false},
	}
	for i, w := range want {
		l := lines[i]
		switch {
		case w.id != "" && l.RequestID != w.id:
			t.Errorf("line %d: request_id %q, want %q", i, l.RequestID, w.id)
		case w.id == "" && !generated.MatchString(l.RequestID):
			t.Errorf("line %d: request_id %q is not a generated id", i, l.RequestID)
		}
		if l.Surface != "chat" || l.Model != w.model || l.Rule != w.rule || strings.Join(l.Chain, ",") != w.chain ||
			l.Target != w.target || l.Attempts == nil || *l.Attempts != w.attempts || l.Status != w.status || l.Stream != w.stream {
			t.Errorf("line %d: %+v (attempts %v), want %+v", i, l, l.Attempts, w)
		}
		if l.Latency == nil || *l.Latency < 0 {
			t.Errorf("line %d: no latency_ms", i)
		}
		if w.stream != (l.TTFB != nil) {
			t.Errorf("line %d: ttfb_ms present = %v, want %v (streams only)", i, l.TTFB != nil, w.stream)
		}
		if l.TTFB != nil && l.Latency != nil && *l.TTFB > *l.Latency {
			t.Errorf("line %d: ttfb_ms %v after latency_ms %v", i, *l.TTFB, *l.Latency)
		}
	}

	for _, out := range []string{logs.String(), metrics} {
		if strings.Contains(out, "FAKEKEY") {
			t.Fatal("a credential reached the logs or /metrics")
		}
	}
}
