package e2e

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestBedrockDotModelIdsAreEscaped: a Bedrock model id "." or ".." must not
// become a path dot-segment (/model/../converse would resolve to
// /converse on any normalizing hop): it goes out as %2E.
func TestBedrockDotModelIdsAreEscaped(t *testing.T) {
	var mu sync.Mutex
	var uris []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uris = append(uris, r.RequestURI)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`))
	}))
	t.Cleanup(srv.Close)
	g := startRawGateway(t, "bedrock", srv.URL, "bedrock-api-key-0123", "5s", "    region: us-east-1\n")
	for _, m := range []string{".", ".."} {
		if resp, body := g.rawPost(t, "/v1/chat/completions", chatBody(m, false)); resp.StatusCode != 200 {
			t.Fatalf("model %q: %d %s", m, resp.StatusCode, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"/model/%2E/converse", "/model/%2E%2E/converse"}; strings.Join(uris, " ") != strings.Join(want, " ") {
		t.Fatalf("upstream saw %q, want %q", uris, want)
	}
}

// TestCompressedAnswerIsNeverRelayedEncoded: an upstream that gzips its
// answer despite Accept-Encoding: identity has a buffered answer decoded,
// and a stream refused as a protocol failure (502); the client never gets
// gzip bytes.
func TestCompressedAnswerIsNeverRelayedEncoded(t *testing.T) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write([]byte(s))
		_ = zw.Close()
		return b.Bytes()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		w.Header().Set("Content-Encoding", "gzip")
		if strings.Contains(b.String(), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(gz("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(gz(completion("decoded answer")))
	}))
	t.Cleanup(srv.Close)
	g := startRawGateway(t, "openai", srv.URL+"/v1", "sk-t", "5s", "")
	resp, body := g.rawPost(t, "/v1/chat/completions", chatBody("m", false))
	if resp.StatusCode != 200 || !strings.Contains(body, "decoded answer") || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("buffered: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Encoding"), body)
	}
	resp, body = g.rawPost(t, "/v1/chat/completions", chatBody("m", true))
	if resp.StatusCode != 502 || strings.Contains(body, "\x1f\x8b") || !strings.Contains(body, "upstream_error") {
		t.Fatalf("stream: %d %q", resp.StatusCode, body)
	}
}
