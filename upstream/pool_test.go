package upstream

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/config"
)

func poolTarget(name, base, key string) config.Target {
	return config.Target{
		VirtualKey: name, Provider: config.ProviderOpenAI, BaseURL: base, APIKey: key,
		Timeout:        time.Second,
		Retry:          config.Retry{Attempts: 2, InitialBackoffMs: 50},
		CircuitBreaker: config.CircuitBreaker{FailureThreshold: 3, SuccessThreshold: 1, MaxHalfThreshold: 1, Timeout: time.Minute},
		Concurrency:    config.Concurrency{MaxConcurrency: 8, QueueSize: 2},
	}
}

func TestPoolKeepsStateAcrossReloadByIdentity(t *testing.T) {
	p := NewPool()
	ct := poolTarget("fast", "https://api.example.com/v1/", "sk-secret-1")
	t1, err := p.Target(&ct)
	if err != nil {
		t.Fatal(err)
	}
	// Trip some state on the old Target.
	for i := 0; i < 3; i++ {
		tk, _ := t1.Breaker().Allow(t0)
		t1.Breaker().Done(tk, ClassServer, t0)
	}
	t1.Park().ParkUntil(t0.Add(time.Hour))

	// Reload: renamed, trailing slash dropped, thresholds changed; same
	// provider, base URL and key.
	ct2 := poolTarget("renamed", "https://api.example.com/v1", "sk-secret-1")
	ct2.CircuitBreaker.Timeout = time.Second
	ct2.Concurrency.MaxConcurrency = 16
	t2, err := p.Target(&ct2)
	if err != nil {
		t.Fatal(err)
	}
	if t2.Breaker() != t1.Breaker() || t2.Park() != t1.Park() || t2.Limiter() != t1.Limiter() {
		t.Fatal("same identity got new state")
	}
	if t2.Breaker().State(t0) != BreakerOpen || !t2.Park().Parked(t0) {
		t.Fatal("state lost across reload")
	}
	if t2.Breaker().State(t0.Add(time.Second)) != BreakerHalfOpen {
		t.Fatal("new breaker timeout not applied")
	}
	if t2.client().MaxConns != 16 {
		t.Fatalf("MaxConns %d after max_concurrency 16", t2.client().MaxConns)
	}
	if t1.client() != t2.client() {
		t.Fatal("both Targets of one identity must use the identity's current client")
	}
	if t2.Name != "renamed" || t2.Endpoint.BaseURL != "https://api.example.com/v1" || t2.Retry.Attempts != 2 || t2.Retry.InitialBackoff != 50*time.Millisecond {
		t.Fatalf("target fields %+v", t2)
	}

	// A changed key, URL or provider is a new identity with fresh state.
	for _, mod := range []func(*config.Target){
		func(c *config.Target) { c.APIKey = "sk-secret-2" },
		func(c *config.Target) { c.BaseURL = "https://other.example.com/v1" },
		func(c *config.Target) { c.AWSSessionToken = "tok" },
	} {
		c := poolTarget("fast", "https://api.example.com/v1", "sk-secret-1")
		mod(&c)
		t3, err := p.Target(&c)
		if err != nil {
			t.Fatal(err)
		}
		if t3.Breaker() == t1.Breaker() || t3.Breaker().State(t0) != BreakerClosed || t3.Park().Parked(t0) {
			t.Fatalf("changed identity %+v kept old state", c)
		}
	}
	if p.Len() != 4 {
		t.Fatalf("pool holds %d identities, want 4", p.Len())
	}
	p.Retain([]*Target{t2})
	if p.Len() != 1 {
		t.Fatalf("Retain kept %d identities, want 1", p.Len())
	}
	t4, _ := p.Target(&ct)
	if t4.Breaker() != t1.Breaker() {
		t.Fatal("Retain dropped an identity still in use")
	}
}

func TestPoolIdentityHidesCredentials(t *testing.T) {
	ct := poolTarget("x", "https://api.example.com/v1", "sk-very-secret")
	ct.AWSSecretAccessKey = "aws-very-secret"
	id := identity(&ct)
	if strings.Contains(id, "very-secret") {
		t.Fatalf("identity %q holds a credential", id)
	}
	// Field boundaries matter: moving bytes between fields changes it.
	a := poolTarget("x", "https://h", "ab")
	b := poolTarget("x", "https://h", "a")
	b.Region = "b"
	if identity(&a) == identity(&b) {
		t.Fatal("identity ambiguous across credential fields")
	}
}

func TestPoolRejectsUnknownProviderAndBadURL(t *testing.T) {
	p := NewPool()
	ct := poolTarget("x", "https://h/v1", "")
	ct.Provider = "nosuch"
	if _, err := p.Target(&ct); err == nil || !strings.Contains(err.Error(), `provider "nosuch" not built`) {
		t.Fatalf("unknown provider: %v", err)
	}
	for _, u := range []string{"", "ftp://h/v1", "http://", "::bad"} {
		ct := poolTarget("x", u, "")
		if _, err := p.Target(&ct); err == nil {
			t.Errorf("base_url %q accepted", u)
		}
	}
}

func TestPoolHostClientSettings(t *testing.T) {
	p := NewPool()
	ct := poolTarget("x", "https://api.example.com/v1", "k")
	tg, _ := p.Target(&ct)
	hc := tg.client()
	if !hc.IsTLS || hc.Addr != "api.example.com:443" || hc.TLSConfig.ServerName != "api.example.com" {
		t.Fatalf("TLS client: tls %v addr %q sni %q", hc.IsTLS, hc.Addr, hc.TLSConfig.ServerName)
	}
	if retry, _ := hc.RetryIfErr(nil, 1, nil); retry {
		t.Fatal("RetryIfErr must never retry")
	}
	if !hc.DisablePathNormalizing || !hc.NoDefaultUserAgentHeader || hc.MaxConns != 8 || hc.MaxResponseBodySize == 0 || hc.ReadTimeout != 0 {
		t.Fatalf("host client fields: %+v", hc)
	}
	ct2 := poolTarget("y", "http://10.0.0.1:8000/v1", "")
	tg2, _ := p.Target(&ct2)
	if tg2.client().IsTLS || tg2.client().Addr != "10.0.0.1:8000" {
		t.Fatalf("plain http client: %v %q", tg2.client().IsTLS, tg2.client().Addr)
	}
}

func TestTargetUpstreamModelAndRetryable(t *testing.T) {
	tg := &Target{ModelMap: map[string]string{"a": "a-2024"}}
	if string(tg.UpstreamModel([]byte("a"))) != "a-2024" || string(tg.UpstreamModel([]byte("b"))) != "b" {
		t.Fatal("UpstreamModel")
	}
	def := RetryPolicy{}
	for code, want := range map[int]bool{408: true, 429: false, 500: true, 503: true, 400: false, 404: false, 200: false} {
		if def.RetryableStatus(code) != want {
			t.Errorf("default RetryableStatus(%d) != %v", code, want)
		}
	}
	custom := RetryPolicy{OnStatusCodes: []int{503}}
	if custom.RetryableStatus(500) || !custom.RetryableStatus(503) {
		t.Error("on_status_codes must replace the default set")
	}
}

func TestPoolReusesKeepAliveAcrossReload(t *testing.T) {
	h := newHarness(t)
	h.mock("a", ok("a"))
	var dials int
	inner := h.pool.Dial
	h.pool.Dial = func(addr string) (net.Conn, error) { dials++; return inner(addr) }
	for i := 0; i < 3; i++ {
		h.walk(chatCall(false), []*Target{h.target("a", nil)}, 5*time.Second, nil) // a fresh Target each time: a reload
	}
	if dials != 1 {
		t.Fatalf("%d connections dialed for 3 sequential walks on one identity, want 1", dials)
	}
	h.walk(chatCall(false), []*Target{h.target("a", func(c *config.Target) { c.APIKey = "rotated" })}, 5*time.Second, nil)
	if dials != 2 {
		t.Fatalf("a new identity reused the old client: %d dials", dials)
	}
}

// A bedrock target's anthropic_betas reach its Endpoint as a copy, nil
// kept nil (the documented default).
func TestPoolAnthropicBetas(t *testing.T) {
	pool := NewPool()
	for _, betas := range [][]string{nil, {}, {"effort-2025-11-24"}} {
		ct := config.Target{VirtualKey: "b", Provider: config.ProviderBedrock, BaseURL: "http://127.0.0.1:1", AnthropicBetas: betas}
		tg, err := pool.Target(&ct)
		if err != nil {
			t.Fatal(err)
		}
		got := tg.Endpoint.AnthropicBetas
		if (got == nil) != (betas == nil) || len(got) != len(betas) {
			t.Errorf("%#v: endpoint %#v", betas, got)
		}
		if len(betas) > 0 {
			betas[0] = "changed"
			if got[0] == "changed" {
				t.Error("the endpoint shares the config's slice")
			}
		}
	}
}
