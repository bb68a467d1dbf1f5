package upstream

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

// A request that waited for a slot until the request deadline made no
// upstream call: the target's breaker must not count it as a failure.
func TestWalkLimiterWaitTimeoutIsNotABreakerFailure(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", ok("a"))
	ta := h.target("a", func(ct *config.Target) {
		ct.Concurrency = config.Concurrency{MaxConcurrency: 1, QueueSize: 1}
		ct.CircuitBreaker.FailureThreshold = 1
	})
	if ok, _ := ta.Limiter().Acquire(time.Time{}, nil); !ok {
		t.Fatal("could not take a's only slot")
	}
	rc, res := h.walk(chatCall(false), []*Target{ta}, 30*time.Millisecond, nil)
	ta.Limiter().Release()
	if rc.Response.StatusCode() != fasthttp.StatusGatewayTimeout || res.Class != ClassTimeout || res.Attempts != 0 {
		t.Fatalf("status %d class %v attempts %d", rc.Response.StatusCode(), res.Class, res.Attempts)
	}
	if st := ta.Breaker().State(h.clk.now()); st != BreakerClosed || ta.Breaker().failures.Load() != 0 {
		t.Fatalf("a wait for a slot counted against the breaker: %v, %d failures", st, ta.Breaker().failures.Load())
	}
	// And the member still serves.
	if rc, _ := h.walk(chatCall(false), []*Target{ta}, 5*time.Second, nil); rc.Response.StatusCode() != 200 || a.calls.Load() != 1 {
		t.Fatalf("status %d calls %d", rc.Response.StatusCode(), a.calls.Load())
	}
}
