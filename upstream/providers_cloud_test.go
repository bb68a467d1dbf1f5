package upstream

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
)

// tokenMock is an OAuth 2.0 token endpoint issuing short-lived tokens.
type tokenMock struct {
	srv    *httptest.Server
	issued atomic.Int32
	fail   atomic.Bool
	life   int // seconds
	prefix string
	mu     sync.Mutex
	forms  []string
}

func newTokenMock(t *testing.T, prefix string, life int) *tokenMock {
	m := &tokenMock{life: life, prefix: prefix}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm() //nolint:errcheck
		m.mu.Lock()
		m.forms = append(m.forms, r.URL.Path+" "+r.PostForm.Encode())
		m.mu.Unlock()
		if m.fail.Load() {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		n := m.issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"%s-token-%04d-abcdefgh","token_type":"Bearer","expires_in":%d}`, m.prefix, n, m.life)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *tokenMock) lastForm() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.forms) == 0 {
		return ""
	}
	return m.forms[len(m.forms)-1]
}

// serviceAccountKey returns a fresh service-account key JSON whose
// token_uri is tokenURI.
func serviceAccountKey(t *testing.T, tokenURI string) string {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "eu-proj-123",
		"private_key_id": "kid1", "private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "gw@eu-proj-123.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokenURI})
	return string(b)
}

// cloudGateway is a minimal gateway running Walk over chain for every
// surface, on 127.0.0.1.
func cloudGateway(t *testing.T, chain []*Target) string {
	var parsers fastjson.ParserPool
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		p := parsers.Get()
		defer parsers.Put(p)
		v, err := p.ParseBytes(ctx.PostBody())
		if err != nil {
			ctx.Error("bad body", 400)
			return
		}
		s := router.SurfaceChat
		switch string(ctx.Path()) {
		case "/v1/embeddings":
			s = router.SurfaceEmbeddings
		case "/v1/messages", "/v1/messages/count_tokens":
			s = router.SurfaceMessages
		case "/v1/completions":
			s = router.SurfaceCompletions
		case "/v1/responses":
			s = router.SurfaceResponses
		}
		call := &Call{Surface: s, Stream: v.GetBool("stream"), Body: ctx.PostBody(), Header: &ctx.Request.Header,
			CountTokens: strings.HasSuffix(string(ctx.Path()), "/count_tokens"),
			Model:       append([]byte(nil), v.GetStringBytes("model")...)}
		var cands []*Target // the router's job: members serving the surface
		for _, tg := range chain {
			if tg.Adapter.Surfaces()&(1<<s) != 0 {
				cands = append(cands, tg)
			}
		}
		Walk(ctx, call, cands, time.Now().Add(20*time.Second), nil)
	}, Logger: quietLogger{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)                     //nolint:errcheck
	t.Cleanup(func() { srv.Shutdown() }) //nolint:errcheck
	return "http://" + ln.Addr().String()
}

func cloudTarget(t *testing.T, pool *Pool, ct config.Target) *Target {
	ct.Timeout = 5 * time.Second
	ct.Retry = config.Retry{Attempts: 1, InitialBackoffMs: 1}
	ct.CircuitBreaker = config.CircuitBreaker{FailureThreshold: 100, SuccessThreshold: 1, MaxHalfThreshold: 1, Timeout: time.Second}
	ct.Concurrency = config.Concurrency{MaxConcurrency: 8, QueueSize: 8}
	tg, err := pool.Target(&ct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if tg.Endpoint.Token != nil {
			tg.Endpoint.Token.Stop()
		}
	})
	return tg
}

func post(t *testing.T, url, body string, hdr ...string) (int, http.Header, string) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func openAIChatOK(echo bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		content := "hi"
		if echo { // a careless upstream quoting the credential it got
			content = "you sent " + r.Header.Get("Authorization") + r.Header.Get("api-key")
		}
		b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": map[string]string{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]int{"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}})
		w.Write(b) //nolint:errcheck
	}
}

func anthropicOK(echo bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		text := "hello from vertex"
		if echo {
			text = "you sent " + r.Header.Get("Authorization")
		}
		b, _ := json.Marshal(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []any{map[string]string{"type": "text", "text": text}}, "stop_reason": "end_turn",
			"usage": map[string]int{"input_tokens": 11, "output_tokens": 4}})
		w.Write(b) //nolint:errcheck
	}
}

type cloudSetup struct {
	azure, vertex   *providerMock
	azTok, vtxTok   *tokenMock
	url             string
	azureT, vertexT *Target
}

func startCloud(t *testing.T, life int) *cloudSetup {
	c := &cloudSetup{azure: newProviderMock(t), vertex: newProviderMock(t),
		azTok: newTokenMock(t, "entra", life), vtxTok: newTokenMock(t, "google", life)}
	pool := NewPool()
	c.azureT = cloudTarget(t, pool, config.Target{VirtualKey: "azure-eu", Provider: config.ProviderAzure, BaseURL: c.azure.srv.URL,
		ModelMap: map[string]string{"claude": "gpt-4o-eu"},
		Cloud: config.Cloud{AzureAPIVersion: "2024-10-21", AzureTenantID: "tenant-1", AzureClientID: "client-1",
			AzureClientSecret: "client-secret-value", AzureAuthority: c.azTok.srv.URL}})
	c.vertexT = cloudTarget(t, pool, config.Target{VirtualKey: "vertex-eu", Provider: config.ProviderVertex, BaseURL: c.vertex.srv.URL,
		Region: "europe-west4", ModelMap: map[string]string{"claude": "claude-sonnet-4-5@20250929"},
		Cloud: config.Cloud{Project: "eu-proj-123", ServiceAccountKey: []byte(serviceAccountKey(t, c.vtxTok.srv.URL+"/token"))}})
	c.url = cloudGateway(t, []*Target{c.azureT, c.vertexT})
	c.vertex.set(anthropicOK(false))
	return c
}

const cloudChatBody = `{"model":"claude","messages":[{"role":"user","content":"hi"}]}`

func TestCloudFailoverAzureToVertex(t *testing.T) {
	c := startCloud(t, 3600)
	for _, tc := range []struct {
		name      string
		azure     http.HandlerFunc
		tokenFail bool
		failover  bool
		status    int
	}{
		{"azure ok", openAIChatOK(false), false, false, 200},
		{"azure 500", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, `{"error":{"message":"boom"}}`, 500) }, false, true, 200},
		{"azure content filter 400 returned as is", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"The response was filtered","type":null,"param":"prompt","code":"content_filter","status":400}}`) //nolint:errcheck
		}, false, false, 400},
		{"azure context length", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}`) //nolint:errcheck
		}, false, true, 200},
		// Last two: a 429 parks azure; then the token endpoint fails.
		{"azure 429 retry-after-ms", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("retry-after-ms", "1500")
			http.Error(w, `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation have exceeded call rate limit"}}`, http.StatusTooManyRequests)
		}, false, true, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.azure.reset()
			c.vertex.reset()
			c.azure.set(tc.azure)
			status, h, body := post(t, c.url+"/v1/chat/completions", cloudChatBody)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if c.azure.calls.Load() != 1 {
				t.Fatalf("azure calls %d, want 1", c.azure.calls.Load())
			}
			if got := c.vertex.calls.Load(); (got == 1) != tc.failover {
				t.Fatalf("vertex calls %d, failover %v", got, tc.failover)
			}
			if tc.status == 400 && !strings.Contains(body, `"code":"content_filter"`) {
				t.Errorf("400 not returned as is: %s", body)
			}
			if tc.failover && h.Get("X-Gateway-Target") != "vertex-eu" {
				t.Errorf("target %q", h.Get("X-Gateway-Target"))
			}
		})
	}
	if !c.azureT.Park().Parked(time.Now()) {
		t.Fatal("azure 429 with retry-after-ms did not park azure")
	}
	// The park came from retry-after-ms (1.5 s → 2 s), not the 5 s default.
	if c.azureT.Park().Parked(time.Now().Add(2500 * time.Millisecond)) {
		t.Error("azure parked past its retry-after-ms")
	}
}

func TestCloudTokenFetchFailureFailsOver(t *testing.T) {
	c := startCloud(t, 3600)
	c.azTok.fail.Store(true)
	// A fresh identity whose first fetch fails.
	pool := NewPool()
	bad := cloudTarget(t, pool, config.Target{VirtualKey: "azure-bad", Provider: config.ProviderAzure, BaseURL: c.azure.srv.URL,
		Cloud: config.Cloud{AzureTenantID: "tenant-2", AzureClientID: "client-2", AzureClientSecret: "another-secret", AzureAuthority: c.azTok.srv.URL}})
	url := cloudGateway(t, []*Target{bad, c.vertexT})
	c.azure.set(openAIChatOK(false))
	status, h, body := post(t, url+"/v1/chat/completions", cloudChatBody)
	if status != 200 || h.Get("X-Gateway-Target") != "vertex-eu" {
		t.Fatalf("status %d target %q: %s", status, h.Get("X-Gateway-Target"), body)
	}
	if c.azure.calls.Load() != 0 {
		t.Fatalf("azure called %d times without a token", c.azure.calls.Load())
	}
	if h.Get("X-Gateway-Attempts") != "1" {
		t.Errorf("attempts %q, want 1 (no call without a token)", h.Get("X-Gateway-Attempts"))
	}
}

func TestCloudWireFormats(t *testing.T) {
	c := startCloud(t, 3600)
	c.azure.set(openAIChatOK(false))
	post(t, c.url+"/v1/chat/completions", cloudChatBody)
	r, b := c.azure.last()
	if r.URL.Path != "/openai/deployments/gpt-4o-eu/chat/completions" || r.URL.Query().Get("api-version") != "2024-10-21" {
		t.Errorf("azure URL %s", r.URL)
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer entra-token-") || r.Header.Get("api-key") != "" {
		t.Errorf("azure credential: Authorization %q api-key %q", r.Header.Get("Authorization"), r.Header.Get("api-key"))
	}
	if string(b) != strings.Replace(cloudChatBody, `"claude"`, `"gpt-4o-eu"`, 1) {
		t.Errorf("azure body %s", b)
	}
	if f := c.azTok.lastForm(); !strings.HasPrefix(f, "/tenant-1/oauth2/v2.0/token ") || !strings.Contains(f, "scope=https%3A%2F%2Fcognitiveservices.azure.com%2F.default") ||
		!strings.Contains(f, "grant_type=client_credentials") {
		t.Errorf("entra token request %q", f)
	}
	// Vertex Claude: chat translated, messages passed through, streams.
	c.azure.set(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })
	status, _, body := post(t, c.url+"/v1/chat/completions", cloudChatBody, "anthropic-beta", "interleaved-thinking-2025-05-14")
	r, b = c.vertex.last()
	if status != 200 || !strings.Contains(body, "hello from vertex") {
		t.Fatalf("vertex chat %d %s", status, body)
	}
	// Translated chat needs no beta and sends none.
	if v := r.Header.Values("anthropic-beta"); v != nil || strings.Contains(string(b), "anthropic_beta") {
		t.Errorf("vertex chat sent betas %q: %s", v, b)
	}
	if r.URL.Path != "/v1/projects/eu-proj-123/locations/europe-west4/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict" {
		t.Errorf("vertex path %s", r.URL.Path)
	}
	var sent map[string]any
	if err := json.Unmarshal(b, &sent); err != nil || sent["anthropic_version"] != "vertex-2023-10-16" || sent["model"] != nil {
		t.Errorf("vertex body %s", b)
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer google-token-") {
		t.Errorf("vertex Authorization %q", r.Header.Get("Authorization"))
	}
	if f := c.vtxTok.lastForm(); !strings.Contains(f, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer") {
		t.Errorf("google token request %q", f)
	}
	msgBody := `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"stream":true}`
	c.vertex.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"+ //nolint:errcheck
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"streamed\"}}\n\n"+
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"+
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"+
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
	status, _, body = post(t, c.url+"/v1/messages", msgBody, "anthropic-beta", "tools-2024,interleaved-thinking-2025-05-14")
	r, b = c.vertex.last()
	if status != 200 || !strings.Contains(body, "streamed") || !strings.Contains(body, "event: message_stop") {
		t.Fatalf("vertex messages stream %d %s", status, body)
	}
	// Of the client's flags, those Vertex accepts (docs/providers.md, Claude Code on Vertex).
	if !strings.HasSuffix(r.URL.Path, "/claude-sonnet-4-5@20250929:streamRawPredict") || r.Header.Get("anthropic-beta") != "interleaved-thinking-2025-05-14" {
		t.Errorf("vertex stream path %s beta %q", r.URL.Path, r.Header.Get("anthropic-beta"))
	}
	sent = nil
	if err := json.Unmarshal(b, &sent); err != nil || sent["anthropic_version"] != "vertex-2023-10-16" || sent["model"] != nil || sent["max_tokens"] != 10.0 {
		t.Errorf("vertex messages body %s", b)
	}
	status, _, body = post(t, c.url+"/v1/chat/completions", `{"model":"claude","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 || !strings.Contains(body, `"content":"streamed"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("vertex chat stream %d %s", status, body)
	}
}

func TestCloudTokensRefreshedAndRedacted(t *testing.T) {
	c := startCloud(t, 3)
	c.azure.set(openAIChatOK(true))
	c.vertex.set(anthropicOK(true))
	deadline := time.Now().Add(7 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		status, _, body := post(t, c.url+"/v1/chat/completions", cloudChatBody)
		if status != 200 {
			t.Fatalf("request %d failed during refresh: %d %s", n, status, body)
		}
		if strings.Contains(body, "entra-token-") || !strings.Contains(body, "[REDACTED]") {
			t.Fatalf("token not redacted: %s", body)
		}
		n++
		time.Sleep(50 * time.Millisecond)
	}
	if got := c.azTok.issued.Load(); got < 3 {
		t.Errorf("entra tokens issued %d in 7 s of 3 s tokens; want at least 3", got)
	}
	t.Logf("%d requests, %d entra tokens", n, c.azTok.issued.Load())
}
