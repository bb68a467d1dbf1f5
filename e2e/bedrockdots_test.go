package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestBedrockDotModelRefused: a model id made only of dots ("." and ".."
// are dot-segments, and %2E is equivalent to "." for any normalizer on the
// way) is 400 with no upstream call, whether the client sends it or
// model_map produces it. A normal id still reaches the upstream.
func TestBedrockDotModelRefused(t *testing.T) {
	var calls atomic.Int32
	var paths []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		paths = append(paths, r.URL.RawPath+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1}}`))
	}))
	defer up.Close()
	g := startRawGateway(t, "bedrock", up.URL, "bedrock-key", "5s", "    model_map: {mapped-dots: \"..\"}\n")
	for _, m := range []string{".", "..", "...", "mapped-dots"} {
		resp, body := g.rawPost(t, "/v1/chat/completions", chatBody(m, false))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "made only of dots") {
			t.Errorf("model %q: %d %s, want 400", m, resp.StatusCode, body)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d upstream calls for dot-only model ids: %v", n, paths)
	}
	resp, body := g.rawPost(t, "/v1/chat/completions", chatBody("a.b", false))
	if resp.StatusCode != http.StatusOK || calls.Load() != 1 {
		t.Fatalf("model a.b: %d %s, %d calls; want 200 after one call", resp.StatusCode, body, calls.Load())
	}
}
