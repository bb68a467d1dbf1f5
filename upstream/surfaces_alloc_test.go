//go:build !race

package upstream

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// A successful non-stream walk on responses and on messages (with the
// client's anthropic headers forwarded) allocates nothing once pools are
// warm, as on chat.
func TestWalkNewSurfacesAllocsZero(t *testing.T) {
	h := newHarness(t)
	h.constMock("a", []byte(`{"id":"x","type":"message"}`))
	for _, tc := range []struct {
		name string
		call *Call
		t    *Target
	}{
		{"responses", responsesCall(false), h.target("a", nil)},
		{"messages", messagesCall(false), h.anthropicTarget("a", nil)},
	} {
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetMethod("POST")
		rc.Request.SetRequestURI("/v1/messages")
		rc.Request.Header.Set("anthropic-version", "2023-06-01")
		rc.Request.Header.Add("anthropic-beta", "b1")
		rc.Request.Header.Add("anthropic-beta", "b2")
		rc.Response.Header.Set("X-Request-Id", "req-1")
		tc.call.Header = &rc.Request.Header
		chain := []*Target{tc.t}
		deadline := time.Now().Add(time.Minute)
		run := func() {
			rc.Response.ResetBody()
			if res := Walk(&rc, tc.call, chain, deadline, nil); res.Status != 200 {
				t.Fatalf("%s: status %d %s", tc.name, res.Status, rc.Response.Body())
			}
		}
		for i := 0; i < 100; i++ {
			run()
		}
		if allocs := testing.AllocsPerRun(1000, run); allocs != 0 {
			t.Errorf("a non-stream %s walk allocates %v per run", tc.name, allocs)
		}
	}
}
