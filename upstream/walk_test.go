package upstream

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

func hdr(rc *fasthttp.RequestCtx, k string) string { return string(rc.Response.Header.Peek(k)) }

func TestWalkFailoverClassesMoveToNextMember(t *testing.T) {
	ctxLen := `{"error":{"message":"too long","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`
	cases := []struct {
		name   string
		handle func(*fasthttp.RequestCtx, int) // nil: host does not exist
		class  Class
		mod    func(*config.Target)
	}{
		{"500", status(500, "boom"), ClassServer, nil},
		{"502", status(502, "bad gateway"), ClassServer, nil},
		{"503", status(503, `{"error":{"message":"overloaded"}}`), ClassServer, nil},
		{"408", status(408, ""), ClassServer, nil},
		{"429", status(429, "slow down", "Retry-After", "3"), ClassRateLimited, nil},
		{"context_length", status(400, ctxLen), ClassContextLength, nil},
		{"transport", nil, ClassTransport, nil},
		{"timeout", func(ctx *fasthttp.RequestCtx, _ int) { time.Sleep(300 * time.Millisecond); ok("a")(ctx, 1) },
			ClassTimeout, func(ct *config.Target) { ct.Timeout = 50 * time.Millisecond }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			var a *mock
			if c.handle != nil {
				a = h.mock("a", c.handle)
			}
			b := h.mock("b", ok("b"))
			obs := newRec()
			rc, res := h.walk(chatCall(false), []*Target{h.target("a", c.mod), h.target("b", nil)}, 5*time.Second, obs)
			if rc.Response.StatusCode() != 200 || string(rc.Response.Body()) != `{"id":"b","object":"chat.completion"}` {
				t.Fatalf("status %d body %s", rc.Response.StatusCode(), rc.Response.Body())
			}
			if a != nil && a.calls.Load() != 1 {
				t.Fatalf("a called %d times, want 1", a.calls.Load())
			}
			if b.calls.Load() != 1 {
				t.Fatalf("b called %d times", b.calls.Load())
			}
			if res.Attempts != 2 || res.Failovers != 1 || res.Target.Name != "b" || res.Class != ClassOK || res.Status != 200 {
				t.Fatalf("result %+v", res)
			}
			if strings.Join(obs.fails, ",") != "a:"+c.class.String() {
				t.Fatalf("failovers %v, want a:%v", obs.fails, c.class)
			}
			if hdr(rc, HeaderTarget) != "b" || hdr(rc, HeaderProvider) != "openai" || hdr(rc, HeaderModel) != "gpt-x" || hdr(rc, HeaderAttempts) != "2" {
				t.Fatalf("gateway headers %q %q %q %q", hdr(rc, HeaderTarget), hdr(rc, HeaderProvider), hdr(rc, HeaderModel), hdr(rc, HeaderAttempts))
			}
			if ct := hdr(rc, "Content-Type"); ct != "application/json" {
				t.Fatalf("content type %q", ct)
			}
		})
	}
}

func TestWalkClientErrorsStopTheWalk(t *testing.T) {
	body := `{"error":{"message":"nope","type":"invalid_request_error","param":null,"code":"bad"}}`
	cases := []struct {
		code       int
		body       string
		wantStatus int
		wantBody   string // "" = synthesized; check the code
		wantCode   string
	}{
		{400, body, 400, body, ""},
		{404, body, 404, body, ""},
		{422, body, 422, body, ""},
		{422, `{"detail":"x"}`, 422, "", CodeInvalidRequest},
		{401, body, 502, "", CodeUpstreamAuth},
		{403, body, 502, "", CodeUpstreamAuth},
	}
	for _, c := range cases {
		t.Run(itoa(c.code), func(t *testing.T) {
			h := newHarness(t)
			a := h.mock("a", status(c.code, c.body))
			b := h.mock("b", ok("b"))
			ta := h.target("a", func(ct *config.Target) { ct.Retry.Attempts = 3 })
			rc, res := h.walk(chatCall(false), []*Target{ta, h.target("b", nil)}, 5*time.Second, nil)
			if b.calls.Load() != 0 {
				t.Fatal("the next member was called after a client error")
			}
			if a.calls.Load() != 1 {
				t.Fatalf("a client error was retried: %d calls", a.calls.Load())
			}
			if rc.Response.StatusCode() != c.wantStatus {
				t.Fatalf("status %d, want %d", rc.Response.StatusCode(), c.wantStatus)
			}
			got := string(rc.Response.Body())
			if c.wantBody != "" && got != c.wantBody {
				t.Fatalf("body %s, want the upstream's %s", got, c.wantBody)
			}
			if c.wantCode != "" && !strings.Contains(got, `"code":"`+c.wantCode+`"`) {
				t.Fatalf("body %s, want code %s", got, c.wantCode)
			}
			if res.Attempts != 1 || res.Failovers != 0 || hdr(rc, HeaderTarget) != "a" || hdr(rc, HeaderAttempts) != "1" {
				t.Fatalf("result %+v headers %q %q", res, hdr(rc, HeaderTarget), hdr(rc, HeaderAttempts))
			}
		})
	}
}

func TestWalkFinalErrorMapping(t *testing.T) {
	ctxLen := `{"error":{"message":"too long","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`
	cases := []struct {
		name       string
		handle     func(*fasthttp.RequestCtx, int)
		mod        func(*config.Target)
		wantStatus int
		wantCode   string
		wantBody   string
		retryAfter string
	}{
		{"5xx", status(500, "x"), nil, 502, CodeUpstreamError, "", ""},
		{"transport", nil, nil, 502, CodeUpstreamError, "", ""},
		{"429 keeps Retry-After", status(429, "x", "Retry-After", "17"), nil, 429, CodeRateLimitExceeded, "", "17"},
		{"429 without Retry-After", status(429, "x"), nil, 429, CodeRateLimitExceeded, "", "5"},
		{"context length on last", status(400, ctxLen), nil, 400, "", ctxLen, ""},
		{"timeout", func(ctx *fasthttp.RequestCtx, _ int) { time.Sleep(200 * time.Millisecond) },
			func(ct *config.Target) { ct.Timeout = 30 * time.Millisecond }, 504, CodeGatewayTimeout, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			if c.handle != nil {
				h.mock("a", c.handle)
			}
			rc, res := h.walk(chatCall(false), []*Target{h.target("a", c.mod)}, 5*time.Second, nil)
			if rc.Response.StatusCode() != c.wantStatus {
				t.Fatalf("status %d, want %d (%s)", rc.Response.StatusCode(), c.wantStatus, rc.Response.Body())
			}
			body := string(rc.Response.Body())
			if c.wantBody != "" && body != c.wantBody {
				t.Fatalf("body %s", body)
			}
			if c.wantCode != "" && !strings.Contains(body, `"code":"`+c.wantCode+`"`) {
				t.Fatalf("body %s, want code %s", body, c.wantCode)
			}
			if hdr(rc, "Retry-After") != c.retryAfter {
				t.Fatalf("Retry-After %q, want %q", hdr(rc, "Retry-After"), c.retryAfter)
			}
			if res.Status != c.wantStatus || hdr(rc, HeaderTarget) != "a" {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

func TestWalkRequestDeadlineGives504AndStops(t *testing.T) {
	h := newHarness(t)
	h.mock("a", func(ctx *fasthttp.RequestCtx, _ int) { time.Sleep(time.Second) })
	b := h.mock("b", ok("b"))
	rc, res := h.walk(chatCall(false), []*Target{h.target("a", nil), h.target("b", nil)}, 60*time.Millisecond, nil)
	if rc.Response.StatusCode() != 504 || res.Class != ClassTimeout {
		t.Fatalf("status %d class %v", rc.Response.StatusCode(), res.Class)
	}
	if b.calls.Load() != 0 {
		t.Fatal("a member was called after the request deadline passed")
	}
}

func TestWalkRetriesCountedExactly(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", func(ctx *fasthttp.RequestCtx, n int) {
		if n < 3 {
			status(503, "busy")(ctx, n)
			return
		}
		ok("a")(ctx, n)
	})
	b := h.mock("b", ok("b"))
	ta := h.target("a", func(ct *config.Target) { ct.Retry = config.Retry{Attempts: 3, InitialBackoffMs: 10} })
	obs := newRec()
	rc, res := h.walk(chatCall(false), []*Target{ta, h.target("b", nil)}, 5*time.Second, obs)
	if rc.Response.StatusCode() != 200 || a.calls.Load() != 3 || b.calls.Load() != 0 {
		t.Fatalf("status %d, a %d calls, b %d calls", rc.Response.StatusCode(), a.calls.Load(), b.calls.Load())
	}
	if res.Attempts != 3 || hdr(rc, HeaderAttempts) != "3" || res.Failovers != 0 {
		t.Fatalf("result %+v, header attempts %q", res, hdr(rc, HeaderAttempts))
	}
	if strings.Join(obs.attempts, ",") != "a:server:503,a:server:503,a:ok:200" {
		t.Fatalf("attempts %v", obs.attempts)
	}
	// Full jitter, doubling: ceilings 10ms then 20ms; the fake jitter
	// returns half.
	if len(h.jitterArgs) != 2 || h.jitterArgs[0] != 10*time.Millisecond || h.jitterArgs[1] != 20*time.Millisecond {
		t.Fatalf("jitter ceilings %v", h.jitterArgs)
	}
	if len(h.sleeps) != 2 || h.sleeps[0] != 5*time.Millisecond || h.sleeps[1] != 10*time.Millisecond {
		t.Fatalf("sleeps %v", h.sleeps)
	}
}

func TestWalkRetryExhaustedThenFailover(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", status(500, "x"))
	b := h.mock("b", ok("b"))
	ta := h.target("a", func(ct *config.Target) { ct.Retry.Attempts = 2 })
	rc, res := h.walk(chatCall(false), []*Target{ta, h.target("b", nil)}, 5*time.Second, nil)
	if rc.Response.StatusCode() != 200 || a.calls.Load() != 2 || b.calls.Load() != 1 || res.Attempts != 3 {
		t.Fatalf("status %d a %d b %d attempts %d", rc.Response.StatusCode(), a.calls.Load(), b.calls.Load(), res.Attempts)
	}
}

func TestWalkTransportErrorsRetry(t *testing.T) {
	h := newHarness(t)
	ta := h.target("nowhere", func(ct *config.Target) { ct.Retry.Attempts = 3 })
	rc, res := h.walk(chatCall(false), []*Target{ta}, 5*time.Second, nil)
	if res.Attempts != 3 || rc.Response.StatusCode() != 502 || res.Class != ClassTransport {
		t.Fatalf("attempts %d status %d class %v", res.Attempts, rc.Response.StatusCode(), res.Class)
	}
}

func TestWalkOnStatusCodesReplacesRetryableSet(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", status(500, "x"))
	ta := h.target("a", func(ct *config.Target) {
		ct.Retry = config.Retry{Attempts: 3, OnStatusCodes: []int{503}, InitialBackoffMs: 1}
	})
	h.walk(chatCall(false), []*Target{ta}, 5*time.Second, nil)
	if a.calls.Load() != 1 {
		t.Fatalf("500 retried %d times with on_status_codes [503]", a.calls.Load()-1)
	}
	h2 := newHarness(t)
	a2 := h2.mock("a", status(503, "x"))
	ta2 := h2.target("a", func(ct *config.Target) {
		ct.Retry = config.Retry{Attempts: 3, OnStatusCodes: []int{503}, InitialBackoffMs: 1}
	})
	h2.walk(chatCall(false), []*Target{ta2}, 5*time.Second, nil)
	if a2.calls.Load() != 3 {
		t.Fatalf("503 in on_status_codes called %d times, want 3", a2.calls.Load())
	}
}

func TestWalkRetryAfterWinsAndDeadlineBoundsBackoff(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", status(503, "x", "Retry-After", "2"))
	ta := h.target("a", func(ct *config.Target) { ct.Retry = config.Retry{Attempts: 2, InitialBackoffMs: 10} })
	h.walk(chatCall(false), []*Target{ta}, 10*time.Second, nil)
	if a.calls.Load() != 2 || len(h.sleeps) != 1 || h.sleeps[0] != 2*time.Second {
		t.Fatalf("calls %d sleeps %v; want 2 calls and one 2s backoff", a.calls.Load(), h.sleeps)
	}

	// Retry-After capped at 30s; a 30s sleep would pass the 10s deadline, so
	// the walk does not sleep and moves on.
	h2 := newHarness(t)
	a2 := h2.mock("a", status(503, "x", "Retry-After", "120"))
	b2 := h2.mock("b", ok("b"))
	ta2 := h2.target("a", func(ct *config.Target) { ct.Retry = config.Retry{Attempts: 2, InitialBackoffMs: 10} })
	rc, _ := h2.walk(chatCall(false), []*Target{ta2, h2.target("b", nil)}, 10*time.Second, nil)
	if a2.calls.Load() != 1 || len(h2.sleeps) != 0 || b2.calls.Load() != 1 || rc.Response.StatusCode() != 200 {
		t.Fatalf("a calls %d sleeps %v b calls %d status %d", a2.calls.Load(), h2.sleeps, b2.calls.Load(), rc.Response.StatusCode())
	}

	h3 := newHarness(t)
	h3.mock("a", status(503, "x", "Retry-After", "120"))
	ta3 := h3.target("a", func(ct *config.Target) { ct.Retry = config.Retry{Attempts: 2, InitialBackoffMs: 10} })
	h3.walk(chatCall(false), []*Target{ta3}, time.Minute, nil)
	if len(h3.sleeps) != 1 || h3.sleeps[0] != MaxRetryAfterBackoff {
		t.Fatalf("sleeps %v, want one capped at 30s", h3.sleeps)
	}
}

func TestWalkBreakerOpensSkipsAndAllOpenIs503(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", status(500, "x"))
	b := h.mock("b", ok("b"))
	ta := h.target("a", func(ct *config.Target) { ct.CircuitBreaker.FailureThreshold = 2 })
	tb := h.target("b", nil)
	for i := 0; i < 2; i++ {
		h.walk(chatCall(false), []*Target{ta, tb}, 5*time.Second, nil)
	}
	if ta.Breaker().State(time.Now()) != BreakerOpen {
		t.Fatalf("breaker %v after 2 failures", ta.Breaker().State(time.Now()))
	}
	obs := newRec()
	rc, res := h.walk(chatCall(false), []*Target{ta, tb}, 5*time.Second, obs)
	if a.calls.Load() != 2 || b.calls.Load() != 3 || rc.Response.StatusCode() != 200 {
		t.Fatalf("a %d b %d status %d", a.calls.Load(), b.calls.Load(), rc.Response.StatusCode())
	}
	if res.Attempts != 1 || strings.Join(obs.skips, ",") != "a:circuit_open" {
		t.Fatalf("attempts %d skips %v", res.Attempts, obs.skips)
	}
	// Every candidate open: 503 upstream_unavailable, nothing called.
	rc, res = h.walk(chatCall(false), []*Target{ta}, 5*time.Second, nil)
	if rc.Response.StatusCode() != 503 || !strings.Contains(string(rc.Response.Body()), CodeUpstreamUnavailable) || res.Attempts != 0 {
		t.Fatalf("all open: status %d body %s attempts %d", rc.Response.StatusCode(), rc.Response.Body(), res.Attempts)
	}
	if hdr(rc, HeaderTarget) != "a" || hdr(rc, HeaderAttempts) != "0" {
		t.Fatalf("headers %q %q", hdr(rc, HeaderTarget), hdr(rc, HeaderAttempts))
	}
	if a.calls.Load() != 2 {
		t.Fatal("an open member was called")
	}
}

func TestWalkParkAfter429(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", status(429, "x", "Retry-After", "7"))
	b := h.mock("b", ok("b"))
	ta, tb := h.target("a", nil), h.target("b", nil)
	h.walk(chatCall(false), []*Target{ta, tb}, 5*time.Second, nil)
	if !ta.Park().Parked(time.Now()) || ta.Park().Remaining(time.Now()) > 7*time.Second || ta.Park().Remaining(time.Now()) < 6*time.Second {
		t.Fatalf("a not parked for ~7s: %v", ta.Park().Remaining(time.Now()))
	}
	if ta.Breaker().State(time.Now()) != BreakerClosed || ta.Breaker().failures.Load() != 0 {
		t.Fatal("a 429 counted as a breaker failure")
	}
	obs := newRec()
	h.walk(chatCall(false), []*Target{ta, tb}, 5*time.Second, obs)
	if a.calls.Load() != 1 || b.calls.Load() != 2 || strings.Join(obs.skips, ",") != "a:parked" {
		t.Fatalf("a %d b %d skips %v", a.calls.Load(), b.calls.Load(), obs.skips)
	}
	// All parked: 429 rate_limit_exceeded with the remaining park.
	rc, res := h.walk(chatCall(false), []*Target{ta}, 5*time.Second, nil)
	if rc.Response.StatusCode() != 429 || hdr(rc, "Retry-After") != "7" || res.Class != ClassParked ||
		!strings.Contains(string(rc.Response.Body()), CodeRateLimitExceeded) {
		t.Fatalf("all parked: %d Retry-After %q class %v body %s", rc.Response.StatusCode(), hdr(rc, "Retry-After"), res.Class, rc.Response.Body())
	}
	// Park expiry: with the deadline in the past the member is called again.
	ta.Park().until.Store(time.Now().Add(-time.Millisecond).UnixNano())
	h.walk(chatCall(false), []*Target{ta, tb}, 5*time.Second, nil)
	if a.calls.Load() != 2 {
		t.Fatalf("expired park still skipped: a calls %d", a.calls.Load())
	}
}

func TestWalkQueueFull(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", ok("a"))
	b := h.mock("b", ok("b"))
	ta := h.target("a", func(ct *config.Target) { ct.Concurrency = config.Concurrency{MaxConcurrency: 1, QueueSize: 0} })
	if ok, _ := ta.Limiter().Acquire(time.Time{}, nil); !ok {
		t.Fatal("could not take a's only slot")
	}
	defer ta.Limiter().Release()
	obs := newRec()
	rc, _ := h.walk(chatCall(false), []*Target{ta, h.target("b", nil)}, 5*time.Second, obs)
	if rc.Response.StatusCode() != 200 || a.calls.Load() != 0 || b.calls.Load() != 1 || strings.Join(obs.skips, ",") != "a:saturated" {
		t.Fatalf("status %d a %d b %d skips %v", rc.Response.StatusCode(), a.calls.Load(), b.calls.Load(), obs.skips)
	}
	rc, res := h.walk(chatCall(false), []*Target{ta}, 5*time.Second, nil)
	if rc.Response.StatusCode() != 429 || hdr(rc, "Retry-After") != "1" || res.Class != ClassSaturated ||
		!strings.Contains(string(rc.Response.Body()), CodeProviderSaturated) {
		t.Fatalf("queue full on last: %d %q %s", rc.Response.StatusCode(), hdr(rc, "Retry-After"), rc.Response.Body())
	}
	if ta.Breaker().failures.Load() != 0 {
		t.Fatal("saturation counted as a breaker failure")
	}
}

func TestWalkModelMapRewriteByteExact(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", ok("a"))
	ta := h.target("a", func(ct *config.Target) { ct.ModelMap = map[string]string{"gpt-x": "gpt-x-2024-08-06"} })
	body := "{\"messages\":[{\"role\":\"user\",\"content\":\"say \\\"model\\\"\",\"model\":\"gpt-x\"}],  \"model\" : \"gpt-x\",\n\"stream\":false}"
	call := &Call{Surface: chatCall(false).Surface, Body: []byte(body), Model: []byte("gpt-x")}
	rc, _ := h.walk(call, []*Target{ta}, 5*time.Second, nil)
	want := "{\"messages\":[{\"role\":\"user\",\"content\":\"say \\\"model\\\"\",\"model\":\"gpt-x\"}],  \"model\" : \"gpt-x-2024-08-06\",\n\"stream\":false}"
	if got := string(a.last().Body()); got != want {
		t.Fatalf("upstream body\n got %s\nwant %s", got, want)
	}
	if hdr(rc, HeaderModel) != "gpt-x-2024-08-06" {
		t.Fatalf("X-Gateway-Model %q", hdr(rc, HeaderModel))
	}
	if string(call.Body) != body {
		t.Fatal("the client's body was modified in place")
	}
	// Unmapped: the exact client bytes.
	h.walk(chatCall(false), []*Target{h.target("a", nil)}, 5*time.Second, nil)
	if got := string(a.last().Body()); got != chatBody {
		t.Fatalf("unmapped body %s", got)
	}
}

func TestWalkNeverForwardsClientCredentials(t *testing.T) {
	h := newHarness(t)
	a := h.mock("a", ok("a"))
	h.walk(chatCall(false), []*Target{h.target("a", nil)}, 5*time.Second, nil,
		"Authorization", "Bearer client-secret",
		"X-Gateway-Metadata", `{"tier":"gold"}`,
		"X-Request-Id", "req-123",
		"OpenAI-Organization", "org-client",
		"Cookie", "session=1",
		"Proxy-Authorization", "Basic eA==",
		"Connection", "Upgrade", "Upgrade", "websocket",
		"X-Api-Key", "client-key")
	r := a.last()
	if got := string(r.Header.Peek("Authorization")); got != "Bearer sk-a" {
		t.Fatalf("upstream Authorization %q, want the target's key", got)
	}
	if got := string(r.Header.Peek("X-Request-Id")); got != "req-123" {
		t.Fatalf("X-Request-Id %q", got)
	}
	raw := r.Header.String()
	for _, leak := range []string{"client-secret", "X-Gateway-Metadata", "gold", "org-client", "session=1", "Proxy-Authorization", "websocket", "client-key"} {
		if strings.Contains(raw, leak) {
			t.Fatalf("upstream request leaks %q:\n%s", leak, raw)
		}
	}
	// Without a key configured, no Authorization at all (not the client's).
	h.walk(chatCall(false), []*Target{h.target("a", func(ct *config.Target) { ct.APIKey = "" })}, 5*time.Second, nil,
		"Authorization", "Bearer client-secret")
	if v := a.last().Header.Peek("Authorization"); v != nil {
		t.Fatalf("Authorization %q sent for a target without a key", v)
	}
}

func TestWalkEmptyChainIs503WithoutPanic(t *testing.T) {
	h := newHarness(t)
	rc, res := h.walk(chatCall(false), nil, time.Second, nil)
	if rc.Response.StatusCode() != 503 || res.Target != nil || res.Attempts != 0 {
		t.Fatalf("empty chain: %d %+v", rc.Response.StatusCode(), res)
	}
}

func TestWalkBreakerHalfOpenProbeClosesIt(t *testing.T) {
	h := newHarness(t)
	var healthy atomic.Bool
	a := h.mock("a", func(ctx *fasthttp.RequestCtx, n int) {
		if !healthy.Load() {
			status(502, "down")(ctx, n)
			return
		}
		ok("a")(ctx, n)
	})
	b := h.mock("b", ok("b"))
	ta := h.target("a", func(ct *config.Target) {
		ct.CircuitBreaker = config.CircuitBreaker{FailureThreshold: 2, SuccessThreshold: 1, MaxHalfThreshold: 1, Timeout: 30 * time.Second}
	})
	tb := h.target("b", nil)
	for i := 0; i < 3; i++ {
		h.walk(chatCall(false), []*Target{ta, tb}, 5*time.Second, nil)
	}
	if a.calls.Load() != 2 {
		t.Fatalf("a called %d times; the open circuit should have skipped the third", a.calls.Load())
	}
	healthy.Store(true)
	h.offset.Store(int64(29 * time.Second))
	h.walk(chatCall(false), []*Target{ta, tb}, 5*time.Second, nil)
	if a.calls.Load() != 2 {
		t.Fatal("a called before the breaker timeout")
	}
	h.offset.Store(int64(30 * time.Second))
	rc, _ := h.walk(chatCall(false), []*Target{ta, tb}, 5*time.Second, nil)
	if a.calls.Load() != 3 || hdr(rc, HeaderTarget) != "a" {
		t.Fatalf("half-open probe: a calls %d target %q", a.calls.Load(), hdr(rc, HeaderTarget))
	}
	if s := ta.Breaker().State(h.clk.now()); s != BreakerClosed {
		t.Fatalf("state after a successful probe: %v", s)
	}
	if b.calls.Load() != 4 {
		t.Fatalf("b calls %d, want 4", b.calls.Load())
	}
}

func TestWalkConcurrentWalksLeaveNoState(t *testing.T) {
	h := newHarness(t)
	h.mock("a", func(ctx *fasthttp.RequestCtx, n int) {
		if n%3 == 0 {
			status(503, "x")(ctx, n)
			return
		}
		ok("a")(ctx, n)
	})
	h.mock("b", ok("b"))
	ta := h.target("a", func(ct *config.Target) {
		ct.Concurrency = config.Concurrency{MaxConcurrency: 2, QueueSize: 3}
		ct.CircuitBreaker.FailureThreshold = 1000
	})
	tb := h.target("b", func(ct *config.Target) { ct.Concurrency = config.Concurrency{MaxConcurrency: 16, QueueSize: 16} })
	var wg sync.WaitGroup
	var okCount atomic.Int32
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				rc, _ := h.walk(chatCall(false), []*Target{ta, tb}, 5*time.Second, nil)
				if rc.Response.StatusCode() == 200 {
					okCount.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if okCount.Load() != 160 {
		t.Fatalf("%d of 160 walks succeeded; a and b together should serve all", okCount.Load())
	}
	if ta.Limiter().InFlight() != 0 || ta.Limiter().QueueDepth() != 0 || tb.Limiter().InFlight() != 0 {
		t.Fatal("slots leaked")
	}
}
