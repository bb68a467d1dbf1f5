package admin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/daemon"
	"github.com/switchyard/switchyard/mock"
)

// Secrets the tests configure or send, which nothing on the console may
// show: the targets' credentials, the client key, the admin key, and a
// marker inside a request body.
const (
	upstreamSecret = "sk-upstream-SECRET-4f1d9c"
	clientKey      = "sk-client-SECRET-77ab21"
	adminKey       = "adm-SECRET-0123456789abcdef"
	bodyMarker     = "BODY-SECRET-9d3e"
)

var secrets = []string{upstreamSecret, clientKey, adminKey, bodyMarker}

// world is a running gateway with its console, in front of three mocks.
type world struct {
	d       *daemon.Daemon
	api     string // base URL of the API listener
	console string // base URL of the console, ending in /
	path    string // config file
	mocks   map[string]*mock.Server
	logs    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testConfig is the console tests' config: three rules and the fallback
// over three targets; beta's breaker opens after two failures.
const testConfig = `server:
  listen: 127.0.0.1:0
  shutdown_timeout: 5s
log:
  level: warn
  access_log: false
admin:
  listen: 127.0.0.1:0
%s
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: alpha}
    - {key: model_prefix, value: claude-, target_keys: [beta, gamma]}
    - {key: metadata, field: tier, value: gold, target_key: gamma}
targets:
  - virtual_key: alpha
    provider: openai
    base_url: %s
    api_key: ` + upstreamSecret + `
    models: [gpt-4o, gpt-4o-mini]
    residency: eu
    limits: {requests_per_minute: 1000}
    prices: {gpt-4o: {input: 2.5, output: 10}, gpt-4o-mini: {input: 0.15, output: 0.6}}
  - virtual_key: beta
    provider: openai
    base_url: %s
    api_key: ` + upstreamSecret + `
    models: [claude-sonnet-4-6]
    residency: us
    prices: {"claude-*": {input: 3, output: 15}}
    retry: {attempts: 1}
    circuit_breaker: {failure_threshold: 2, timeout: 120s}
  - virtual_key: gamma
    provider: openai
    base_url: %s
    api_key: ` + upstreamSecret + `
    prices: {"*": {input: 1, output: 2}}
auth:
  keys:
    - name: acme
      key: ` + clientKey + `
      limits: {requests_per_minute: 600, spend_per_day_usd: 50, spend_per_month_usd: 1000}
`

// startWorld starts the mocks and the gateway with its console; withKey
// sets admin.key.
func startWorld(t *testing.T, withKey bool) *world {
	t.Helper()
	w := &world{mocks: map[string]*mock.Server{}, logs: &syncBuffer{}}
	var urls []any
	keyLine := ""
	if withKey {
		keyLine = "  key: " + adminKey
	}
	urls = append(urls, keyLine)
	for _, name := range []string{"alpha", "beta", "gamma"} {
		m, err := mock.Start("127.0.0.1:0", mock.Options{Name: name, APIKey: upstreamSecret})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		w.mocks[name] = m
		urls = append(urls, m.BaseURL())
	}
	w.path = filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(w.path, []byte(fmt.Sprintf(testConfig, urls...)), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(w.path, "127.0.0.1:0", w.logs)
	if err != nil {
		t.Fatalf("daemon: %v\n%s", err, w.logs)
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	if err := d.StartConsole(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = d.Shutdown(ctx)
		<-served
	})
	w.d = d
	w.api = "http://" + d.Addr().String()
	w.console = "http://" + d.ConsoleAddr().String() + "/"
	return w
}

// chat sends a chat completion as the client key acme; it returns the
// status.
func (w *world) chat(t *testing.T, model, requestID string) int {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, model, bodyMarker)
	req, _ := http.NewRequest("POST", w.api+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clientKey)
	if requestID != "" {
		req.Header.Set("X-Request-Id", requestID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// get GETs a console path with the given Authorization header ("" = none).
func (w *world) get(t *testing.T, path, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", w.console+strings.TrimPrefix(path, "/"), nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// noSecret fails the test when text shows any configured credential,
// client key, admin key or request body.
func noSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s shows the secret %q", where, s)
		}
	}
}
