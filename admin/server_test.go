package admin

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/cli"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

const unitConfig = `server: {listen: "127.0.0.1:8080"}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: sk-upstream-unit-SECRET}
  - {virtual_key: b, provider: openai, base_url: "http://127.0.0.1:2/v1", api_key: sk-upstream-unit-SECRET}
auth:
  keys:
    - {name: acme, key: sk-client-unit-SECRET}
`

// fakeQuotas reports fixed quota state for every key and target.
type fakeQuotas struct{}

func (fakeQuotas) KeyQuota(string) *QuotaUse {
	return &QuotaUse{Limits: []QuotaLimit{{Name: "requests_per_minute", Limit: 600, Used: 12, Remaining: 588}}}
}
func (fakeQuotas) TargetQuota(name string) *QuotaUse {
	if name != "b" {
		return nil
	}
	return &QuotaUse{Limits: []QuotaLimit{{Name: "tokens_per_minute", Limit: 1000, Used: 1000}}}
}
func (fakeQuotas) Spend(string) (float64, float64, bool) { return 1.25, 30.5, true }

func newTestServer(t testing.TB, admin config.Admin, q Quotas) (*Server, *hotpath.Gateway) {
	t.Helper()
	cfg, err := config.Parse("unit.yaml", []byte(unitConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := hotpath.Build(cfg, upstream.NewPool(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	g := hotpath.New(st)
	h := &History{}
	h.Add(Reload{Time: time.Now(), Result: "start", Hash: cfg.Hash})
	h.Add(Reload{Time: time.Now(), Result: "failure", Hash: cfg.Hash, Problems: []string{"unit.yaml:3:1: strategy: bad"}})
	return New(Options{Gateway: g, Recorder: NewRecorder([]string{"acme"}), Reloads: h, Admin: admin, Version: "test",
		Quotas: q, Log: zerolog.Nop()}), g
}

// do runs one GET through the console's handler.
func do(s *Server, uri, host, auth string) (int, string, *fasthttp.ResponseHeader) {
	var rc fasthttp.RequestCtx
	rc.Request.SetRequestURI(uri)
	rc.Request.Header.SetHost(host)
	if auth != "" {
		rc.Request.Header.Set("Authorization", auth)
	}
	s.handle(&rc)
	return rc.Response.StatusCode(), string(rc.Response.Body()), &rc.Response.Header
}

func TestStatusFields(t *testing.T) {
	s, g := newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, fakeQuotas{})
	st := g.Load()
	st.Targets[0].Park().ParkUntil(time.Now().Add(time.Minute))
	s.opts.Recorder.Finished(&telemetry.Entry{Key: "acme", Status: 503, Usage: upstream.Usage{Prompt: 5, HasPrompt: true}})
	s.opts.Recorder.Finished(&telemetry.Entry{Key: "acme", Status: 200, Usage: upstream.Usage{Completion: 7, HasCompletion: true}})
	code, body, _ := do(s, "/api/status", "127.0.0.1:9090", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var got Status
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Rules) != 1 || got.Rules[0].Chain[0] != "a" || got.Rules[0].Line != 5 || got.Fallback != "a" {
		t.Errorf("rules %+v fallback %q", got.Rules, got.Fallback)
	}
	if len(got.Targets) != 2 || got.Targets[0].ParkedUntil == nil || got.Targets[1].ParkedUntil != nil || got.Targets[0].Circuit != "closed" {
		t.Errorf("targets %+v", got.Targets)
	}
	if got.Targets[0].Quota != nil || got.Targets[1].Quota == nil || got.Targets[1].Quota.Limits[0].Used != 1000 {
		t.Errorf("target quotas %+v %+v", got.Targets[0].Quota, got.Targets[1].Quota)
	}
	if len(got.Keys) != 1 {
		t.Fatalf("keys %+v; want acme only (auth on, no keyless request)", got.Keys)
	}
	k := got.Keys[0]
	if k.Name != "acme" || k.Requests != 2 || k.Errors != 1 || k.PromptTokens != 5 || k.CompletionTokens != 7 ||
		k.SpendDayUSD == nil || *k.SpendDayUSD != 1.25 || *k.SpendMonthUSD != 30.5 || k.Quota == nil || k.LastSeen == nil {
		t.Errorf("key %+v", k)
	}
	if len(got.Config.Reloads) != 2 || got.Config.Reloads[0].Result != "failure" || got.Config.Reloads[0].Problems[0] == "" {
		t.Errorf("reloads newest first with problems: %+v", got.Config.Reloads)
	}
	if got.Config.Hash != st.Config.Hash || !got.Config.Auth || got.DecisionsHead != 2 {
		t.Errorf("config %+v head %d", got.Config, got.DecisionsHead)
	}
	if strings.Contains(body, "SECRET") || strings.Contains(body, "127.0.0.1:1") {
		t.Errorf("status shows a credential or a base URL: %s", body)
	}

	// Without quotas, they are null.
	s, _ = newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	_, body, _ = do(s, "/api/status", "localhost:9090", "")
	if !strings.Contains(body, `"quota":null`) || !strings.Contains(body, `"spend_day_usd":null`) {
		t.Errorf("without quotas: %s", body)
	}
}

func TestDecisionsAPI(t *testing.T) {
	s, _ := newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	rec := s.opts.Recorder
	for i := range 3 {
		rec.Finished(&telemetry.Entry{Key: "acme", Status: 200 + i, RequestID: []byte("r"), Walked: []string{"a"}, Target: "a"})
	}
	type answer struct {
		Decisions []struct {
			Seq    uint64 `json:"seq"`
			Status int    `json:"status"`
		} `json:"decisions"`
		Next uint64 `json:"next"`
	}
	get := func(uri string) (int, answer) {
		code, body, _ := do(s, uri, "127.0.0.1", "")
		var a answer
		_ = json.Unmarshal([]byte(body), &a)
		return code, a
	}
	if code, a := get("/api/decisions?after=1&wait=0"); code != 200 || len(a.Decisions) != 2 || a.Decisions[0].Seq != 2 || a.Next != 3 {
		t.Errorf("after=1: %d %+v", code, a)
	}
	if code, a := get("/api/decisions?after=3&wait=0"); code != 200 || len(a.Decisions) != 0 || a.Next != 3 {
		t.Errorf("after=head: %d %+v", code, a)
	}
	// A long poll answers when a decision comes.
	go func() {
		time.Sleep(100 * time.Millisecond)
		rec.Finished(&telemetry.Entry{Key: "acme", Status: 404})
	}()
	if code, a := get("/api/decisions?after=3&wait=10"); code != 200 || len(a.Decisions) != 1 || a.Decisions[0].Status != 404 || a.Next != 4 {
		t.Errorf("long poll: %d %+v", code, a)
	}
	// A number from before a restart starts over.
	if _, a := get("/api/decisions?after=99&wait=0"); len(a.Decisions) != 4 {
		t.Errorf("after=99 (past the head): %+v", a)
	}
	for _, bad := range []string{"/api/decisions?after=x", "/api/decisions?wait=-1"} {
		if code, _ := get(bad); code != 400 {
			t.Errorf("%s: %d, want 400", bad, code)
		}
	}
}

func TestExplainAPIErrors(t *testing.T) {
	s, _ := newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	for uri, want := range map[string]string{
		"/api/explain":                         "model is required",
		"/api/explain?model=x&surface=fax":     `-surface "fax" is not a surface`,
		"/api/explain?model=x&stream=maybe":    "stream: want true or false",
		"/api/explain?model=x&key=nobody":      `-key "nobody" names no client key; configured: acme`,
		"/api/explain?model=x&metadata=%5B%5D": "-metadata: X-Gateway-Metadata: must be a JSON object",
	} {
		code, body, _ := do(s, uri, "127.0.0.1", "")
		var e struct{ Error string }
		_ = json.Unmarshal([]byte(body), &e)
		if code != 400 || !strings.Contains(e.Error, want) {
			t.Errorf("%s: %d %s; want 400 with %q", uri, code, body, want)
		}
	}
	code, body, _ := do(s, "/api/explain?model=gpt-4o&key=acme", "127.0.0.1", "")
	if code != 200 || !strings.Contains(body, `"outcome: routes to a"`) {
		t.Errorf("explain: %d %s", code, body)
	}
}

// Keyless (loopback) consoles answer loopback Host names only; any
// method but GET is refused; only the page's files are served.
func TestConsoleGuards(t *testing.T) {
	s, _ := newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	for _, host := range []string{"evil.example", "evil.example:9090", "192.168.1.9:9090"} {
		if code, _, _ := do(s, "/api/status", host, ""); code != 403 {
			t.Errorf("Host %s: %d, want 403", host, code)
		}
	}
	for _, host := range []string{"localhost:9090", "127.0.0.1:9090", "[::1]:9090"} {
		if code, _, _ := do(s, "/", host, ""); code != 200 {
			t.Errorf("Host %s: %d, want 200", host, code)
		}
	}
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod("POST")
	rc.Request.SetRequestURI("/api/status")
	rc.Request.Header.SetHost("127.0.0.1")
	s.handle(&rc)
	if rc.Response.StatusCode() != 405 {
		t.Errorf("POST: %d, want 405", rc.Response.StatusCode())
	}
	code, _, h := do(s, "/app.js", "127.0.0.1", "")
	if code != 200 || !strings.Contains(string(h.Peek("Content-Security-Policy")), "default-src 'none'") ||
		!strings.HasPrefix(string(h.ContentType()), "text/javascript") {
		t.Errorf("/app.js: %d %s", code, h)
	}
	for _, p := range []string{"/web/app.js", "/../go.mod", "/server.go", "/index.htm"} {
		if code, _, _ := do(s, p, "127.0.0.1", ""); code != 404 {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}

	// With a key, the Host is not restricted (the key is the guard).
	const key = "adm-unit-0123456789"
	s, _ = newTestServer(t, config.Admin{Listen: "0.0.0.0:9090", KeyDigest: sha256.Sum256([]byte(key)), HasKey: true}, nil)
	if code, _, _ := do(s, "/api/status", "console.internal", "Bearer "+key); code != 200 {
		t.Errorf("with the key: %d", code)
	}
	if code, _, h := do(s, "/api/status", "console.internal", ""); code != 401 || !strings.Contains(string(h.Peek("WWW-Authenticate")), "Basic") {
		t.Errorf("without the key: %d", code)
	}
}

// /api/explain answers `switchyard explain -json`: the text and lines as
// before, and the report as data.
func TestExplainAPI(t *testing.T) {
	s, g := newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	code, body, _ := do(s, "/api/explain?model=gpt-4o&key=acme&surface=responses", "127.0.0.1", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	want, err := cli.ExplainData(g.Load().Config, cli.ExplainRequest{Model: "gpt-4o", Key: "acme", Surface: "responses"})
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	if body != string(wantJSON) {
		t.Errorf("/api/explain\n%s\nexplain -json\n%s", body, wantJSON)
	}
	var got cli.Explanation
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Key == nil || got.Key.Name != "acme" || len(got.Members) != 1 || got.Members[0].Target != "a" ||
		got.Members[0].Form != "native" || !got.Members[0].Candidate || len(got.Outcome.RoutesTo) != 1 ||
		!strings.HasPrefix(got.Text, "key: acme") || got.Lines[len(got.Lines)-1] != "outcome: routes to a" {
		t.Errorf("explanation %+v", got)
	}
	if strings.Contains(body, "SECRET") {
		t.Errorf("explain shows a credential: %s", body)
	}
}
