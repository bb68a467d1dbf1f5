package hotpath

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// leakyYAML pins key eu-key to [eu] but routes its requests to us targets:
// through the fallback (usopenai) and through failover (m: euopenai then
// usopenai; c: euanth then usanth). The proof refuses it; these tests
// build it without the proof to check the guard on its own.
const leakyYAML = `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_keys: [euopenai, usopenai]}
    - {key: model, value: c, target_keys: [euanth, usanth]}
targets:
  - {virtual_key: usopenai, provider: openai, base_url: "{{usopenai}}", residency: us}
  - {virtual_key: euopenai, provider: openai, base_url: "{{euopenai}}", residency: eu}
  - {virtual_key: euanth, provider: anthropic, base_url: "{{euanth}}", api_key: k, residency: eu}
  - {virtual_key: usanth, provider: anthropic, base_url: "{{usanth}}", api_key: k, residency: us}
auth:
  keys:
    - {name: eu-key, key: sy-eu, residency: [eu]}
    - {name: any-key, key: sy-any}
`

// buildUnproven builds a State from yaml without the residency proof, as a
// config the proof would refuse must never be built outside a test.
func buildUnproven(t *testing.T, tg *testGateway, yaml string) *State {
	t.Helper()
	path := filepath.Join(t.TempDir(), "leaky.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); err == nil || !strings.Contains(err.Error(), `client key "eu-key" (residency ["eu"]) can reach target "usopenai"`) {
		t.Fatalf("the proof should refuse this config; Load said %v", err)
	}
	cfg, err := config.LoadUnproven(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Build(cfg, tg.pool, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestResidencyGuardStopsTheWalk(t *testing.T) {
	names := []string{"usopenai", "euopenai", "euanth", "usanth"}
	mocks := map[string]*mockUpstream{}
	var list []*mockUpstream
	for _, n := range names {
		m := startMock(t, n)
		mocks[n] = m
		list = append(list, m)
	}
	tg := startGateway(t, "strategy: {mode: conditional, conditions: [{key: model, value: x, target_key: a}]}\ntargets: [{virtual_key: a, provider: openai, base_url: \"http://127.0.0.1:1/v1\"}]\n")
	tg.g.Store(buildUnproven(t, tg, expandMocks(leakyYAML, list...)))
	var mu sync.Mutex
	var fenced, steps []string
	tg.g.Finished = func(e *telemetry.Entry) {
		if n := len(e.Steps); n > 0 && e.Steps[n-1].Refused {
			mu.Lock()
			steps = append(steps, e.Steps[n-1].Target.Name)
			mu.Unlock()
		}
	}
	tg.g.Fenced = func(key, target string) {
		mu.Lock()
		fenced = append(fenced, key+"→"+target)
		mu.Unlock()
	}
	mocks["euopenai"].setFault(fault503)
	mocks["euanth"].setFault(fault503)

	cases := []struct {
		name, path, body, target string
		eu                       int64 // calls expected on the eu member before the guard
	}{
		{"chat fallback", "/v1/chat/completions", `{"model":"x","messages":[]}`, "usopenai", 0},
		{"chat stream fallback", "/v1/chat/completions", `{"model":"x","stream":true,"messages":[]}`, "usopenai", 0},
		{"completions fallback", "/v1/completions", `{"model":"x","prompt":"hi"}`, "usopenai", 0},
		{"embeddings fallback", "/v1/embeddings", `{"model":"x","input":"hi"}`, "usopenai", 0},
		{"images fallback", "/v1/images/generations", `{"model":"x","prompt":"hi"}`, "usopenai", 0},
		{"responses fallback", "/v1/responses", `{"model":"x","input":"hi"}`, "usopenai", 0},
		{"chat failover", "/v1/chat/completions", `{"model":"m","messages":[]}`, "usopenai", 1},
		{"chat stream failover", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`, "usopenai", 1},
		{"embeddings failover", "/v1/embeddings", `{"model":"m","input":"hi"}`, "usopenai", 1},
		{"responses failover", "/v1/responses", `{"model":"m","input":"hi"}`, "usopenai", 1},
		{"messages failover", "/v1/messages", `{"model":"c","max_tokens":1,"messages":[]}`, "usanth", 1},
		{"messages stream failover", "/v1/messages", `{"model":"c","stream":true,"max_tokens":1,"messages":[]}`, "usanth", 1},
		{"chat via anthropic failover", "/v1/chat/completions", `{"model":"c","messages":[]}`, "usanth", 1},
	}
	for _, c := range cases {
		before := map[string]int64{}
		for n, m := range mocks {
			before[n] = m.calls.Load()
		}
		fenced = nil
		r := tg.do("POST", c.path, c.body, "Authorization", "Bearer sy-eu")
		want := "internal_error"
		if c.path == "/v1/messages" {
			want = `"type":"api_error"` // Anthropic's envelope
		}
		if r.Status != 500 || !strings.Contains(r.Body, want) {
			t.Errorf("%s: %d %s; want 500 internal_error", c.name, r.Status, r.Body)
		}
		if got := mocks[c.target].calls.Load() - before[c.target]; got != 0 {
			t.Errorf("%s: %s was called %d times; the guard must stop the walk before it", c.name, c.target, got)
		}
		eu := "euopenai"
		if c.target == "usanth" {
			eu = "euanth"
		}
		if got := mocks[eu].calls.Load() - before[eu]; got != c.eu {
			t.Errorf("%s: %s called %d times; want %d", c.name, eu, got, c.eu)
		}
		waitUntil := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			n := len(steps)
			mu.Unlock()
			if n > 0 || time.Now().After(waitUntil) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		if len(fenced) != 1 || fenced[0] != "eu-key→"+c.target {
			t.Errorf("%s: Fenced heard %v; want [eu-key→%s]", c.name, fenced, c.target)
		}
		if len(steps) != 1 || steps[0] != c.target {
			t.Errorf("%s: the record's last step %v; want the refused %s", c.name, steps, c.target)
		}
		steps = nil
		mu.Unlock()
	}
	// A key without residency is not fenced: the same request reaches us.
	before := mocks["usopenai"].calls.Load()
	if r := tg.do("POST", "/v1/chat/completions", `{"model":"x","messages":[]}`, "Authorization", "Bearer sy-any"); r.Status != 200 {
		t.Fatalf("any-key: %d %s", r.Status, r.Body)
	}
	if mocks["usopenai"].calls.Load() != before+1 {
		t.Fatal("any-key's request did not reach usopenai")
	}
}

func TestFenceAdmits(t *testing.T) {
	allowed := make([]bool, 130)
	allowed[0], allowed[64], allowed[129] = true, true, true
	f := upstream.NewFence(allowed)
	for i := -1; i < 140; i++ {
		want := i == 0 || i == 64 || i == 129
		if f.Admits(i) != want {
			t.Errorf("Admits(%d) = %v; want %v", i, !want, want)
		}
	}
	var none *upstream.Fence
	if !none.Admits(5) {
		t.Error("a nil Fence must admit every target")
	}
}
