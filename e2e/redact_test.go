package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// echoKey is a target credential an upstream quotes back.
const echoKey = "sk-echoed-target-credential-0123456789"

// TestTargetCredentialNeverReachesClient: an upstream that quotes the
// credential it received — in a 4xx passed through, in an Anthropic error
// the gateway translates, in a relayed stream chunk and in a post-commit
// stream error — has every copy replaced before the bytes leave the
// gateway.
func TestTargetCredentialNeverReachesClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if key == "" {
			key = r.Header.Get("x-api-key")
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/v1/messages"): // anthropic
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad key %s"}}`, key)
		case strings.Contains(string(body), `"stream":true`):
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"your key is %s\"}}]}\n\n", key)
			w.(http.Flusher).Flush()
			fmt.Fprintf(w, "data: {\"error\":{\"message\":\"stream broke for %s\",\"type\":\"server_error\"}}\n\n", key)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","param":null,"code":"invalid_api_key_x"}}`, key)
		}
	}))
	t.Cleanup(srv.Close)

	oa := startRawGateway(t, "openai", srv.URL+"/v1", echoKey, "5s", "")
	resp, body := oa.rawPost(t, "/v1/chat/completions", chatBody("m", false))
	if resp.StatusCode != 400 || !strings.Contains(body, "Incorrect API key provided: [REDACTED]") {
		t.Errorf("4xx passthrough: %d %s", resp.StatusCode, body)
	}
	resp, body = oa.rawPost(t, "/v1/chat/completions", chatBody("m", true))
	if resp.StatusCode != 200 || !strings.Contains(body, "your key is [REDACTED]") || !strings.Contains(body, "stream broke for [REDACTED]") {
		t.Errorf("stream: %d %s", resp.StatusCode, body)
	}
	if strings.Contains(body, echoKey) {
		t.Errorf("stream relayed the credential: %s", body)
	}

	an := startRawGateway(t, "anthropic", srv.URL, echoKey, "5s", "")
	resp, body = an.rawPost(t, "/v1/chat/completions", chatBody("claude-x", false))
	if resp.StatusCode != 400 || strings.Contains(body, echoKey) || !strings.Contains(body, "[REDACTED]") {
		t.Errorf("anthropic 400: %d %s", resp.StatusCode, body)
	}
	for _, g := range []*rawGateway{oa, an} {
		if strings.Contains(g.logs.String(), echoKey) {
			t.Error("a log line holds the credential")
		}
	}
}
