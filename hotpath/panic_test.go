package hotpath

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/upstream"
)

// panicHook records what Gateway.Panicked hears.
type panicHook struct {
	mu     sync.Mutex
	values []any
	stacks []string
}

func (h *panicHook) panicked(v any, stack []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.values = append(h.values, v)
	h.stacks = append(h.stacks, string(stack))
}

func (h *panicHook) get() ([]any, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]any(nil), h.values...), append([]string(nil), h.stacks...)
}

// panickyObserver panics once, in the event its fields name.
type panickyObserver struct {
	upstream.NopObserver
	inAttempt, inStreamEnd atomic.Bool
}

func (o *panickyObserver) Attempt(*upstream.Target, upstream.Class, int, time.Duration) {
	if o.inAttempt.CompareAndSwap(true, false) {
		panic("observer bug in Attempt")
	}
}

func (o *panickyObserver) StreamEnd(upstream.Result, time.Duration) {
	if o.inStreamEnd.CompareAndSwap(true, false) {
		panic("observer bug in StreamEnd")
	}
}

// A panic in the handler (here: forced from a hook the walk calls) is
// answered 500 internal_error in the OpenAI envelope, keeps the request id,
// reaches Gateway.Panicked with its stack, leaks no limiter slot, and the
// server keeps serving.
func TestHandlerRecoversPanic(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	hook := &panicHook{}
	obs := &panickyObserver{}
	obs.inAttempt.Store(true)
	tg.g.Observer = obs
	tg.g.Panicked = hook.panicked

	r := tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o"}`, "X-Request-Id", "req-panic")
	wantResponse(t, "panicked request", r, 500, envelope("internal gateway error", "server_error", "internal_error"))
	if r.Header["X-Request-Id"] != "req-panic" || r.Header["Content-Type"] != "application/json" {
		t.Errorf("headers %v", r.Header)
	}
	if _, ok := r.Header["X-Gateway-Rule"]; ok {
		t.Errorf("a half-written response leaked through: %v", r.Header)
	}
	values, stacks := hook.get()
	if len(values) != 1 || values[0] != "observer bug in Attempt" || !strings.Contains(stacks[0], "panickyObserver") {
		t.Fatalf("Panicked got %v %v", values, stacks)
	}
	if n := tg.g.Load().Targets[0].Limiter().InFlight(); n != 0 {
		t.Errorf("%d limiter slots leaked by the panic", n)
	}
	// Still serving, on the same keep-alive client.
	r = tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o"}`)
	if r.Status != 200 {
		t.Fatalf("after a panic: %d %s", r.Status, r.Body)
	}

	// A panic in one of the gateway's own endpoints too.
	tg2 := startGateway(t, baseConfig, a, b, c)
	tg2.g.Panicked = hook.panicked
	tg2.g.Metrics = func(*fasthttp.RequestCtx) { panic("metrics bug") }
	r = tg2.do("GET", "/metrics", "")
	wantResponse(t, "panicked /metrics", r, 500, envelope("internal gateway error", "server_error", "internal_error"))
}

// A panic in a committed stream's writer (here: the observer's StreamEnd,
// which runs on fasthttp's stream goroutine) must not take the process
// down; it reaches Gateway.Panicked and the slot is released.
func TestStreamWriterPanicReachesPanicked(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	hook := &panicHook{}
	obs := &panickyObserver{}
	obs.inStreamEnd.Store(true)
	tg.g.Observer = obs
	tg.g.Panicked = hook.panicked

	r := tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o","stream":true}`)
	if r.Status != 200 || !strings.HasSuffix(r.Body, "data: [DONE]\n\n") {
		t.Fatalf("stream: %d %q", r.Status, r.Body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if values, _ := hook.get(); len(values) == 1 && values[0] == "observer bug in StreamEnd" {
			break
		}
		if time.Now().After(deadline) {
			values, _ := hook.get()
			t.Fatalf("Panicked got %v", values)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := tg.g.Load().Targets[0].Limiter().InFlight(); n != 0 {
		t.Errorf("%d limiter slots leaked by the panic", n)
	}
	if r := tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o","stream":true}`); r.Status != 200 {
		t.Fatalf("after a panic: %d %s", r.Status, r.Body)
	}
}
