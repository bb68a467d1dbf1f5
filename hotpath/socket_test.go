package hotpath

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/telemetry"
)

// TestSocketUpgradeChecks: a GET /v1/responses asking for a WebSocket
// reaches ResponsesSocket only once its client key and metadata header
// are checked; every refusal is in OpenAI's envelope and gets a Finished
// record; without a ResponsesSocket, or without Upgrade, it is 405.
func TestSocketUpgradeChecks(t *testing.T) {
	tg, ms := startAuthGateway(t)
	var handed []string
	var finished []int
	tg.g.Finished = func(e *telemetry.Entry) { finished = append(finished, e.Status) }
	up := []string{"Upgrade", "websocket", "Connection", "Upgrade"}
	with := func(h ...string) []string { return append(append([]string(nil), up...), h...) }

	// No socket server: 405 as before.
	if r := tg.do("GET", "/v1/responses", "", with("Authorization", "Bearer sy-gold")...); r.Status != 405 {
		t.Fatalf("without ResponsesSocket: %d", r.Status)
	}
	tg.g.ResponsesSocket = func(rc *fasthttp.RequestCtx, key string) bool {
		handed = append(handed, key)
		rc.SetStatusCode(299) // stands in for the 101 the upgrade writes
		return true
	}
	for _, c := range []struct {
		name   string
		hdr    []string
		status int
		code   string
	}{
		{"no key", with(), 401, "invalid_api_key"},
		{"unknown key", with("Authorization", "Bearer sy-nobody"), 401, "invalid_api_key"},
		{"bad metadata", with("Authorization", "Bearer sy-gold", "X-Gateway-Metadata", `{"a":[1]}`), 400, "invalid_request"},
		{"not an upgrade", []string{"Authorization", "Bearer sy-gold"}, 405, "method_not_allowed"},
	} {
		n := len(finished)
		r := tg.do("GET", "/v1/responses", "", c.hdr...)
		if r.Status != c.status || !strings.Contains(r.Body, `"code":"`+c.code+`"`) {
			t.Errorf("%s: %d %s", c.name, r.Status, r.Body)
		}
		if len(finished) != n+1 {
			t.Errorf("%s: %d Finished records, want 1", c.name, len(finished)-n)
		}
	}
	if len(handed) != 0 {
		t.Fatalf("refused requests were handed over: %v", handed)
	}
	n := len(finished)
	if r := tg.do("GET", "/v1/responses", "", with("Authorization", "Bearer sy-gold")...); r.Status != 299 {
		t.Fatalf("checked upgrade: %d %s", r.Status, r.Body)
	}
	if len(handed) != 1 || handed[0] != "gold" || len(finished) != n {
		t.Fatalf("handed %v, %d records (an upgrade gets none)", handed, len(finished)-n)
	}
	// While draining a socket is refused: it would be closed at once.
	tg.g.SetDraining(true)
	if r := tg.do("GET", "/v1/responses", "", with("Authorization", "Bearer sy-gold")...); r.Status != 503 || len(handed) != 1 {
		t.Fatalf("draining: %d, handed %d", r.Status, len(handed))
	}
	if c := calls(ms); c != [3]int64{} {
		t.Fatalf("upstream calls %v", c)
	}
}
