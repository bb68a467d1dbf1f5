package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// echoKey is a target credential an upstream quotes back; its '+' and '/'
// are what JSON encoders write as \u002B and \/.
const echoKey = "sk-echoed-target+credential/0123456789"

// startEchoUpstream is an OpenAI- and Anthropic-like upstream that quotes
// the credential it received in its answers. The request's model picks how
// the key is written (escapeStyles); a stream answers a chunk quoting it,
// then an error frame quoting it.
func startEchoUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if key == "" {
			key = r.Header.Get("x-api-key")
		}
		var req struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &req)
		if style, ok := escapeStyles[req.Model]; ok {
			key = style(key)
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
	return srv
}

// escapeStyles are the JSON spellings of a key an upstream may quote, by
// the model that asks for them; any other model gets the literal key.
var escapeStyles = map[string]func(string) string{
	// '+' as \u002B (as some encoders write it), '/' as \/.
	"esc-plus": strings.NewReplacer("+", `\u002B`, "/", `\/`).Replace,
	// lower-case hex, '/' as \u002f, and a letter escaped too.
	"esc-mixed": strings.NewReplacer("+", `\u002b`, "/", `\u002f`, "e", `\u0065`).Replace,
	// every byte escaped, upper-case hex.
	"esc-all": func(k string) string {
		var b strings.Builder
		for i := range len(k) {
			fmt.Fprintf(&b, `\u%04X`, k[i])
		}
		return b.String()
	},
}

// TestTargetCredentialNeverReachesClient: an upstream that quotes the
// credential it received — in a 4xx passed through, in an Anthropic error
// the gateway translates, in a relayed stream chunk and in a post-commit
// stream error — has every copy replaced before the bytes leave the
// gateway.
func TestTargetCredentialNeverReachesClient(t *testing.T) {
	srv := startEchoUpstream(t)
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

// TestEscapedCredentialNeverReachesClient: an upstream that quotes the
// credential JSON-escaped (\u002B for '+', \/ or \u002f for '/', or every
// byte as \uXXXX) in a 400 passed through, in a relayed stream chunk and in
// a post-commit stream error frame: the client, decoding the JSON it
// receives, finds the key in no string.
func TestEscapedCredentialNeverReachesClient(t *testing.T) {
	srv := startEchoUpstream(t)
	oa := startRawGateway(t, "openai", srv.URL+"/v1", echoKey, "5s", "")
	an := startRawGateway(t, "anthropic", srv.URL, echoKey, "5s", "")
	for model := range escapeStyles {
		resp, body := oa.rawPost(t, "/v1/chat/completions", chatBody(model, false))
		if resp.StatusCode != 400 || !strings.Contains(body, "Incorrect API key provided: [REDACTED]") {
			t.Errorf("%s: 4xx passthrough: %d %s", model, resp.StatusCode, body)
		}
		wantNoKey(t, model+" 400", []string{body})

		resp, body = oa.rawPost(t, "/v1/chat/completions", chatBody(model, true))
		var events []string
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events = append(events, d)
			}
		}
		if resp.StatusCode != 200 || len(events) != 2 ||
			!strings.Contains(events[0], "your key is [REDACTED]") || !strings.Contains(events[1], "stream broke for [REDACTED]") {
			t.Errorf("%s: stream: %d %s", model, resp.StatusCode, body)
		}
		wantNoKey(t, model+" stream", events)

		resp, body = an.rawPost(t, "/v1/chat/completions", chatBody(model, false))
		if resp.StatusCode != 400 || !strings.Contains(body, "[REDACTED]") {
			t.Errorf("%s: anthropic 400: %d %s", model, resp.StatusCode, body)
		}
		wantNoKey(t, model+" anthropic 400", []string{body})
	}
}

// wantNoKey fails when a JSON document of docs (each must decode) holds
// echoKey in any string, key or value, or its raw bytes do.
func wantNoKey(t *testing.T, what string, docs []string) {
	t.Helper()
	for _, d := range docs {
		var v any
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			t.Errorf("%s: not JSON (%v): %s", what, err, d)
			continue
		}
		if strings.Contains(d, echoKey) || jsonHolds(v, echoKey) {
			t.Errorf("%s: the client decodes the credential from %s", what, d)
		}
	}
}

// jsonHolds reports whether a string in v, a decoded JSON value, contains s.
func jsonHolds(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, s)
	case []any:
		for _, e := range v {
			if jsonHolds(e, s) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.Contains(k, s) || jsonHolds(e, s) {
				return true
			}
		}
	}
	return false
}
