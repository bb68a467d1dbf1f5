package daemon

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/tenancy/tenancytest"
)

// TestResponseOwnersShareTheQuotaRedis runs three daemons on one Redis
// (quotas.store: redis): a response created through the first is refused
// to another key through the second, with no upstream call, and continued
// unchanged by its own key through the third.
func TestResponseOwnersShareTheQuotaRedis(t *testing.T) {
	addr := tenancytest.StartRedis(t)
	var calls atomic.Int64
	var last atomic.Value
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		last.Store(string(b))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_%d","object":"response","status":"completed","output":[]}`, n)
	}))
	t.Cleanup(up.Close)
	cfg := fmt.Sprintf(`
strategy: {mode: conditional, conditions: [{key: model, value: x, target_key: up}]}
targets: [{virtual_key: up, provider: openai, base_url: %q, api_key: k}]
auth:
  keys:
    - {name: acme, key: sy-acme}
    - {name: globex, key: sy-globex}
quotas:
  store: redis
  redis: {url: "redis://%s", key_prefix: "owners-test:"}
`, up.URL+"/v1", addr)
	var bases []string
	for i := range 3 {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("r%d.yaml", i))
		writeFile(t, path, cfg)
		_, base := startDaemon(t, path, &syncBuffer{})
		bases = append(bases, base)
	}
	post := func(base, key, body string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/v1/responses", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(bases[0], "sy-acme", `{"model":"x","input":"hi"}`); code != 200 || !strings.Contains(body, `"resp_1"`) {
		t.Fatalf("create: %d %s", code, body)
	}
	follow := `{"model":"x","previous_response_id":"resp_1","input":"more"}`
	if code, body := post(bases[1], "sy-globex", follow); code != 404 || !strings.Contains(body, "response_not_found") || calls.Load() != 1 {
		t.Fatalf("globex on replica 2: %d %s, upstream calls %d; want 404 and no call", code, body, calls.Load())
	}
	if code, body := post(bases[2], "sy-acme", follow); code != 200 || calls.Load() != 2 || last.Load() != follow {
		t.Fatalf("acme on replica 3: %d %s; upstream got %v", code, body, last.Load())
	}
}
