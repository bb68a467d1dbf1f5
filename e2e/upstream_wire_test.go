package e2e

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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
