package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/vertex"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"golang.org/x/oauth2/google"

	"github.com/switchyard/switchyard/config"
)

// The official SDKs are the oracle of each wire format: what the SDK sends
// to a recording mock, the gateway must send to the same mock, field for
// field (method, path, query, credential header, JSON body).

// sameJSON fails t unless a and b hold the same JSON value.
func sameJSON(t *testing.T, what string, a, b []byte) {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: SDK body %q: %v", what, a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: gateway body %q: %v", what, b, err)
	}
	if !reflect.DeepEqual(va, vb) {
		t.Errorf("%s bodies differ:\n SDK     %s\n gateway %s", what, a, b)
	}
}

func sameRequest(t *testing.T, what string, sdk, gw *http.Request) {
	t.Helper()
	if sdk.Method != gw.Method || sdk.URL.EscapedPath() != gw.URL.EscapedPath() || sdk.URL.RawQuery != gw.URL.RawQuery {
		t.Errorf("%s: SDK %s %s?%s, gateway %s %s?%s", what, sdk.Method, sdk.URL.EscapedPath(), sdk.URL.RawQuery,
			gw.Method, gw.URL.EscapedPath(), gw.URL.RawQuery)
	}
}

func TestSDKOracleAzure(t *testing.T) {
	m := newProviderMock(t)
	m.set(openAIChatOK(false))
	const key = "azure-key-0123456789"
	sdk := openai.NewClient(azure.WithEndpoint(m.srv.URL, "2024-10-21"), azure.WithAPIKey(key), azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-eu-dz", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	if _, err := sdk.Chat.Completions.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	sdkReq, sdkBody := m.last()

	pool := NewPool()
	tg := cloudTarget(t, pool, config.Target{VirtualKey: "az", Provider: config.ProviderAzure, BaseURL: m.srv.URL, APIKey: key,
		ModelMap: map[string]string{"gpt-4o": "gpt-4o-eu-dz"}, Cloud: config.Cloud{AzureAPIVersion: "2024-10-21"}})
	url := cloudGateway(t, []*Target{tg})
	gwClient := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	params.Model = "gpt-4o"
	if _, err := gwClient.Chat.Completions.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	gwReq, gwBody := m.last()
	sameRequest(t, "azure chat", sdkReq, gwReq)
	if sdkReq.Header.Get("Api-Key") != key || gwReq.Header.Get("Api-Key") != key || gwReq.Header.Get("Authorization") != "" {
		t.Errorf("api-key: SDK %q, gateway %q (Authorization %q)", sdkReq.Header.Get("Api-Key"), gwReq.Header.Get("Api-Key"), gwReq.Header.Get("Authorization"))
	}
	sameJSON(t, "azure chat", sdkBody, gwBody)

	// Embeddings on the same deployment path shape.
	m.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"model":"e","usage":{"prompt_tokens":1,"total_tokens":1}}`)) //nolint:errcheck
	})
	eparams := openai.EmbeddingNewParams{Model: "gpt-4o-eu-dz", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")}}
	if _, err := sdk.Embeddings.New(ctx, eparams); err != nil {
		t.Fatal(err)
	}
	sdkReq, sdkBody = m.last()
	eparams.Model = "gpt-4o"
	if _, err := gwClient.Embeddings.New(ctx, eparams); err != nil {
		t.Fatal(err)
	}
	gwReq, gwBody = m.last()
	sameRequest(t, "azure embeddings", sdkReq, gwReq)
	sameJSON(t, "azure embeddings", sdkBody, gwBody)
}

func TestSDKOracleVertexClaude(t *testing.T) {
	m := newProviderMock(t)
	m.set(anthropicOK(false))
	tok := newTokenMock(t, "google", 3600)
	saKey := serviceAccountKey(t, tok.srv.URL+"/token")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	creds, err := google.CredentialsFromJSONWithType(ctx, []byte(saKey), google.ServiceAccount, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	sdk := anthropic.NewClient(vertex.WithCredentials(ctx, "europe-west4", "eu-proj-123", creds),
		anthropicopt.WithBaseURL(m.srv.URL+"/"), anthropicopt.WithMaxRetries(0))
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5@20250929", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
	if _, err := sdk.Messages.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	sdkReq, sdkBody := m.last()

	pool := NewPool()
	tg := cloudTarget(t, pool, config.Target{VirtualKey: "vx", Provider: config.ProviderVertex, BaseURL: m.srv.URL, Region: "europe-west4",
		ModelMap: map[string]string{"claude-sonnet": "claude-sonnet-4-5@20250929"},
		Cloud:    config.Cloud{Project: "eu-proj-123", ServiceAccountKey: []byte(saKey)}})
	url := cloudGateway(t, []*Target{tg})
	// The client's own Messages body, as the plain Anthropic SDK sends it.
	plain := newProviderMock(t)
	plain.set(anthropicOK(false))
	pc := anthropic.NewClient(anthropicopt.WithBaseURL(plain.srv.URL), anthropicopt.WithAPIKey("client-key"), anthropicopt.WithMaxRetries(0))
	params.Model = "claude-sonnet"
	if _, err := pc.Messages.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	_, clientBody := plain.last()
	status, _, body := post(t, url+"/v1/messages", string(clientBody))
	if status != 200 {
		t.Fatalf("gateway %d %s", status, body)
	}
	gwReq, gwBody := m.last()
	sameRequest(t, "vertex messages", sdkReq, gwReq)
	// The SDK derives anthropic_version from its own anthropic-version
	// header; the gateway sends the value Vertex documents (docs/providers.md,
	// Choices). Every other field must match.
	var sdkFields map[string]any
	if err := json.Unmarshal(sdkBody, &sdkFields); err != nil || sdkFields["anthropic_version"] == nil {
		t.Fatalf("SDK body without anthropic_version: %s", sdkBody)
	}
	sdkFields["anthropic_version"] = "vertex-2023-10-16"
	sdkBody, _ = json.Marshal(sdkFields)
	sameJSON(t, "vertex messages", sdkBody, gwBody)
	for _, r := range []*http.Request{sdkReq, gwReq} {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer google-token-") || r.Header.Get("anthropic-version") != "" {
			t.Errorf("headers: Authorization %q anthropic-version %q", r.Header.Get("Authorization"), r.Header.Get("anthropic-version"))
		}
	}
	if !strings.Contains(string(gwBody), `"anthropic_version":"vertex-2023-10-16"`) || strings.Contains(string(gwBody), `"model"`) {
		t.Errorf("gateway body %s", gwBody)
	}
}

func TestSDKOracleGemini(t *testing.T) {
	m := newProviderMock(t)
	m.set(openAIChatOK(false))
	const key = "gemini-key-0123456789"
	base := m.srv.URL + "/v1beta/openai"
	sdk := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := openai.ChatCompletionNewParams{Model: "gemini-2.5-flash", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	if _, err := sdk.Chat.Completions.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	sdkReq, sdkBody := m.last()
	pool := NewPool()
	tg := cloudTarget(t, pool, config.Target{VirtualKey: "gm", Provider: config.ProviderGemini, BaseURL: base, APIKey: key})
	url := cloudGateway(t, []*Target{tg})
	gw := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	if _, err := gw.Chat.Completions.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	gwReq, gwBody := m.last()
	sameRequest(t, "gemini chat", sdkReq, gwReq)
	if sdkReq.Header.Get("Authorization") != gwReq.Header.Get("Authorization") {
		t.Errorf("Authorization: SDK %q, gateway %q", sdkReq.Header.Get("Authorization"), gwReq.Header.Get("Authorization"))
	}
	sameJSON(t, "gemini chat", sdkBody, gwBody)
}
