package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/daemon"
	"github.com/switchyard/switchyard/mock"
)

// The cloud providers end to end: the real daemon in front of mock's
// Cloud mock (Azure deployment paths and api-key, Vertex rawPredict and the
// OpenAI-compatible endpoint, Gemini, and both token endpoints).

const (
	azureKey      = "azure-api-key-0123456789"
	geminiKey     = "gemini-api-key-0123456789"
	entraSecret   = "entra-client-secret-0123456789"
	cloudSAKeyTpl = `{"type":"service_account","project_id":"eu-proj-123","private_key_id":"k1","private_key":%q,"client_email":"gw@eu-proj-123.iam.gserviceaccount.com","client_id":"1","token_uri":%q}`
)

// cloudConfig: chat on eu-chat walks [azure-eu (Entra ID, classic URLs),
// vertex-eu (Claude)]; eu-chat-bad walks [azure-badcred, vertex-eu];
// gemini-* goes to gemini; vertex-gemini to vertex's OpenAI endpoint;
// azure-v1 to an azure v1 API target with api-key.
const cloudConfig = `server:
  listen: 127.0.0.1:0
  request_timeout: 10s
  shutdown_timeout: 5s
log:
  level: debug
  format: json
  access_log: true
strategy:
  mode: conditional
  conditions:
    - key: model
      value: eu-chat
      target_keys: [azure-eu, vertex-eu]
    - key: model
      value: eu-chat-bad
      target_keys: [azure-badcred, vertex-eu]
    - key: model_prefix
      value: gemini-
      target_key: gemini
    - key: model
      value: vertex-gemini
      target_key: vertex-eu
    - key: model
      value: azure-v1
      target_key: azure-v1
    - key: model
      value: vertex-claude
      target_key: vertex-eu
targets:
  - virtual_key: azure-eu
    provider: azure
    base_url: %[1]s
    azure_api_version: 2024-10-21
    azure_deployment_type: datazone
    azure_tenant_id: tenant-eu
    azure_client_id: app-1
    azure_client_secret: ` + entraSecret + `
    azure_authority: %[1]s
    models: [eu-chat]
    model_map: {eu-chat: gpt-4o-dzeu}
    timeout: 5s
  - virtual_key: azure-badcred
    provider: azure
    base_url: %[1]s
    azure_api_version: 2024-10-21
    azure_tenant_id: tenant-eu
    azure_client_id: app-1
    azure_client_secret: wrong-secret-0123456789
    azure_authority: %[1]s
    models: [eu-chat-bad]
    timeout: 5s
  - virtual_key: vertex-eu
    provider: vertex
    base_url: %[1]s
    project: eu-proj-123
    region: europe-west4
    credentials_file: %[2]s
    models: [eu-chat, eu-chat-bad, vertex-gemini, vertex-claude]
    model_map: {eu-chat: claude-sonnet-4-5@20250929, eu-chat-bad: claude-sonnet-4-5@20250929, vertex-gemini: google/gemini-2.5-flash, vertex-claude: claude-sonnet-4-5@20250929}
    timeout: 5s
  - virtual_key: gemini
    base_url: %[1]s/v1beta/openai
    api_key: ` + geminiKey + `
    models: ["gemini-*"]
    timeout: 5s
  - virtual_key: azure-v1
    provider: azure
    base_url: %[1]s/openai/v1
    api_key: ` + azureKey + `
    models: [azure-v1]
    timeout: 5s
`

type cloudEnv struct {
	cloud *mock.Cloud
	base  string
	logs  *syncBuffer
	http  *http.Client
}

func startCloudEnv(t *testing.T, tokenLife time.Duration, echo bool) *cloudEnv {
	t.Helper()
	c, err := mock.StartCloud("127.0.0.1:0", mock.CloudOptions{AzureKey: azureKey, GeminiKey: geminiKey,
		ClientSecret: entraSecret, TokenLife: tokenLife, EchoAuth: echo})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) //nolint:errcheck
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "sa.json")
	sa := fmt.Sprintf(cloudSAKeyTpl, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), c.URL()+"/token")
	if err := os.WriteFile(keyFile, []byte(sa), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "switchyard.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(cloudConfig, c.URL(), keyFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &cloudEnv{cloud: c, logs: &syncBuffer{}, http: &http.Client{Timeout: 15 * time.Second}}
	d, err := daemon.New(cfgPath, "127.0.0.1:0", e.logs)
	if err != nil {
		t.Fatalf("daemon.New: %v\nlogs:\n%s", err, e.logs)
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	e.base = "http://" + d.Addr().String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		<-served
	})
	return e
}

func (e *cloudEnv) post(t *testing.T, path, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (e *cloudEnv) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := e.http.Get(e.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func chatJSON(model string, stream bool) string {
	s := ""
	if stream {
		s = `,"stream":true,"stream_options":{"include_usage":true}`
	}
	return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]` + s + `}`
}

// TestCloudProvidersEverySurface: each provider and each surface it serves,
// streams included, answers through the gateway in the client's shape.
func TestCloudProvidersEverySurface(t *testing.T) {
	e := startCloudEnv(t, time.Hour, false)
	for _, tc := range []struct {
		name, path, body, target, want string
	}{
		{"azure classic chat", "/v1/chat/completions", chatJSON("eu-chat", false), "azure-eu", `"object":"chat.completion"`},
		{"azure classic chat stream", "/v1/chat/completions", chatJSON("eu-chat", true), "azure-eu", "data: [DONE]"},
		{"azure classic embeddings", "/v1/embeddings", `{"model":"eu-chat","input":"hi"}`, "azure-eu", `"object":"list"`},
		{"azure classic completions", "/v1/completions", `{"model":"eu-chat","prompt":"hi"}`, "azure-eu", `"object":"text_completion"`},
		{"azure v1 chat", "/v1/chat/completions", chatJSON("azure-v1", false), "azure-v1", `"object":"chat.completion"`},
		{"azure v1 images", "/v1/images/generations", `{"model":"azure-v1","prompt":"a cat"}`, "azure-v1", `"data"`},
		{"gemini chat", "/v1/chat/completions", chatJSON("gemini-2.5-flash", false), "gemini", `"object":"chat.completion"`},
		{"gemini chat stream", "/v1/chat/completions", chatJSON("gemini-2.5-flash", true), "gemini", "data: [DONE]"},
		{"gemini embeddings", "/v1/embeddings", `{"model":"gemini-embedding-001","input":"hi"}`, "gemini", `"embedding"`},
		{"vertex openai-compatible chat", "/v1/chat/completions", chatJSON("vertex-gemini", true), "vertex-eu", "data: [DONE]"},
		{"vertex claude messages", "/v1/messages", `{"model":"vertex-claude","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, "vertex-eu", `"hello from vertex claude-sonnet-4-5@20250929"`},
		{"vertex claude messages stream", "/v1/messages", `{"model":"vertex-claude","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "vertex-eu", "event: message_stop"},
		{"vertex claude count_tokens", "/v1/messages/count_tokens", `{"model":"vertex-claude","messages":[{"role":"user","content":"hi"}]}`, "vertex-eu", `"input_tokens":12`},
		// Messages on members that do not speak it: translated over chat.
		{"azure classic messages", "/v1/messages", `{"model":"eu-chat","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, "azure-eu", `"type":"message"`},
		{"azure classic messages stream", "/v1/messages", `{"model":"eu-chat","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "azure-eu", "event: message_stop"},
		{"vertex gemini messages", "/v1/messages", `{"model":"vertex-gemini","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, "vertex-eu", `"type":"message"`},
		{"gemini messages stream", "/v1/messages", `{"model":"gemini-2.5-flash","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "gemini", "event: message_stop"},
		// count_tokens on a member that cannot count: the estimate, no call.
		{"azure classic count_tokens", "/v1/messages/count_tokens", `{"model":"eu-chat","messages":[{"role":"user","content":"hi"}]}`, "azure-eu", `{"input_tokens":16}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := e.post(t, tc.path, tc.body)
			if status != 200 || h.Get("X-Gateway-Target") != tc.target || !strings.Contains(body, tc.want) {
				t.Fatalf("status %d target %q (want %s), body:\n%s", status, h.Get("X-Gateway-Target"), tc.target, body)
			}
			if estimate := strings.HasSuffix(tc.path, "/count_tokens") && tc.target != "vertex-eu"; (h.Get("X-Gateway-Estimate") == "true") != estimate {
				t.Errorf("X-Gateway-Estimate %q, want it only on an estimate", h.Get("X-Gateway-Estimate"))
			}
		})
	}
	// Vertex Claude on chat: translated, streamed, usage counted.
	e.cloud.Inner().Fail(mock.Failure{Status: 503})
	defer e.cloud.Inner().Reset()
	status, h, body := e.post(t, "/v1/chat/completions", chatJSON("eu-chat", true))
	if status != 200 || h.Get("X-Gateway-Target") != "vertex-eu" || !strings.Contains(body, `"content":"hello from vertex`) ||
		!strings.Contains(body, `"prompt_tokens":12`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("vertex claude chat stream %d %q:\n%s", status, h.Get("X-Gateway-Target"), body)
	}
	waitFor(t, 3*time.Second, "tokens counted", func() bool {
		m := e.get(t, "/metrics")
		return strings.Contains(m, `switchyard_tokens_total{target="vertex-eu"`) && strings.Contains(m, `switchyard_tokens_total{target="azure-eu"`)
	})
}

// TestCloudFailoverAzureVertex: one chain [azure, vertex]; azure's 5xx, 429
// and a failed token fetch move to vertex; a 400 is returned as is.
func TestCloudFailoverAzureVertex(t *testing.T) {
	e := startCloudEnv(t, time.Hour, false)
	for _, tc := range []struct {
		name   string
		fail   mock.Failure
		status int
		target string
	}{
		{"503", mock.Failure{Status: 503}, 200, "vertex-eu"},
		{"content filter 400 as is", mock.Failure{Status: 400, Code: "content_filter"}, 400, "azure-eu"},
		{"429", mock.Failure{Status: 429, RetryAfter: 1}, 200, "vertex-eu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.cloud.Inner().Fail(tc.fail)
			defer e.cloud.Inner().Reset()
			before := e.cloud.ClaudeCalls()
			status, h, body := e.post(t, "/v1/chat/completions", chatJSON("eu-chat", false))
			if status != tc.status || h.Get("X-Gateway-Target") != tc.target {
				t.Fatalf("status %d target %q:\n%s", status, h.Get("X-Gateway-Target"), body)
			}
			if tc.status == 400 && (!strings.Contains(body, `"code":"content_filter"`) || e.cloud.ClaudeCalls() != before) {
				t.Fatalf("a 400 must come back as is, with no failover: %s", body)
			}
		})
	}
	// Token endpoint refuses azure-badcred's secret: no azure call, vertex answers.
	innerBefore := e.cloud.Inner().Stats().Requests
	status, h, body := e.post(t, "/v1/chat/completions", chatJSON("eu-chat-bad", false))
	if status != 200 || h.Get("X-Gateway-Target") != "vertex-eu" || e.cloud.Inner().Stats().Requests != innerBefore {
		t.Fatalf("token failure: status %d target %q:\n%s", status, h.Get("X-Gateway-Target"), body)
	}
	// Vertex 429 RESOURCE_EXHAUSTED with azure down: the client sees 429.
	e.cloud.Inner().Fail(mock.Failure{Status: 500})
	e.cloud.FailClaude(429)
	status, _, body = e.post(t, "/v1/chat/completions", chatJSON("eu-chat", false))
	e.cloud.FailClaude(0)
	e.cloud.Inner().Reset()
	if status != 429 || !strings.Contains(body, "rate_limit_exceeded") {
		t.Fatalf("vertex 429: %d %s", status, body)
	}
}

// TestCloudTokensRefreshedNoSecretLeaks: 3-second tokens are replaced with
// no request failing; no token or credential reaches a client, the log or
// /metrics, even from an upstream that echoes them.
func TestCloudTokensRefreshedNoSecretLeaks(t *testing.T) {
	e := startCloudEnv(t, 3*time.Second, true)
	deadline := time.Now().Add(7 * time.Second)
	var answers strings.Builder
	n := 0
	for time.Now().Before(deadline) {
		for _, req := range [][2]string{
			{"/v1/chat/completions", chatJSON("eu-chat", false)},
			{"/v1/messages", `{"model":"eu-chat","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`},
			{"/v1/chat/completions", chatJSON("gemini-2.5-flash", false)},
			{"/v1/chat/completions", chatJSON("azure-v1", false)},
		} {
			status, h, body := e.post(t, req[0], req[1])
			if status != 200 {
				t.Fatalf("request %d failed during token refresh: %d %s", n, status, body)
			}
			fmt.Fprintf(&answers, "%v\n%s\n", h, body)
			n++
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := e.cloud.TokensIssued(); got < 4 {
		t.Errorf("%d tokens issued in 7 s of 3 s tokens for two identities; want at least 4", got)
	}
	if !strings.Contains(answers.String(), "[REDACTED]") {
		t.Fatal("the echoing mock's credential never showed up redacted: the test proves nothing")
	}
	everything := answers.String() + e.logs.String() + e.get(t, "/metrics")
	for _, secret := range []string{"mocktok-", azureKey, geminiKey, entraSecret, "BEGIN PRIVATE KEY"} {
		if strings.Contains(everything, secret) {
			i := strings.Index(everything, secret)
			t.Errorf("%q leaked: …%s…", secret, everything[max(0, i-80):min(len(everything), i+80)])
		}
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(e.logs.String(), "\n", 2)[0]), &line); err != nil {
		t.Errorf("log is not JSON lines: %v", err)
	}
	t.Logf("%d requests, %d tokens issued", n, e.cloud.TokensIssued())
}
