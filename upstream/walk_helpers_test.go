package upstream

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
)

// mock is one fake upstream served on an in-memory listener.
type mock struct {
	ln    *fasthttputil.InmemoryListener
	calls atomic.Int32
	// handle answers call n (1-based).
	handle func(ctx *fasthttp.RequestCtx, n int)

	mu   sync.Mutex
	reqs []*fasthttp.Request // copies of every request received
}

func (m *mock) last() *fasthttp.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.reqs) == 0 {
		return nil
	}
	return m.reqs[len(m.reqs)-1]
}

// harness wires mocks to a Pool through Pool.Dial: host "a" is the mock
// registered as "a"; an unregistered host fails to dial (transport error).
type harness struct {
	t     testing.TB
	pool  *Pool
	mu    sync.Mutex
	mocks map[string]*mock
	clk   *clock
	// offset moves the walk's clock forward (breaker and park time) without
	// sleeping.
	offset atomic.Int64
	// sleeps records every backoff the walk slept (not really sleeping).
	sleeps []time.Duration
	// jitterArgs records every full-jitter ceiling asked for.
	jitterArgs []time.Duration
}

func newHarness(t testing.TB) *harness {
	h := &harness{t: t, pool: NewPool(), mocks: map[string]*mock{}}
	h.pool.Dial = func(addr string) (net.Conn, error) {
		host, _, _ := strings.Cut(addr, ":")
		h.mu.Lock()
		m := h.mocks[host]
		h.mu.Unlock()
		if m == nil {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errRefused}
		}
		return m.ln.Dial()
	}
	h.clk = &clock{
		now: func() time.Time { return time.Now().Add(time.Duration(h.offset.Load())) },
		sleep: func(d time.Duration) {
			h.mu.Lock()
			h.sleeps = append(h.sleeps, d)
			h.mu.Unlock()
		},
		jitter: func(d time.Duration) time.Duration {
			h.mu.Lock()
			h.jitterArgs = append(h.jitterArgs, d)
			h.mu.Unlock()
			return d / 2
		},
	}
	return h
}

type refusedError struct{}

func (refusedError) Error() string { return "connection refused" }

var errRefused error = refusedError{}

// mock starts a fake upstream named host.
func (h *harness) mock(host string, handle func(ctx *fasthttp.RequestCtx, n int)) *mock {
	m := &mock{ln: fasthttputil.NewInmemoryListener(), handle: handle}
	srv := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			n := int(m.calls.Add(1))
			var cp fasthttp.Request
			ctx.Request.CopyTo(&cp)
			m.mu.Lock()
			m.reqs = append(m.reqs, &cp)
			m.mu.Unlock()
			m.handle(ctx, n)
		},
		DisableHeaderNamesNormalizing: true,
		CloseOnShutdown:               true,
		Logger:                        quietLogger{},
	}
	go srv.Serve(m.ln)                     //nolint:errcheck
	h.t.Cleanup(func() { srv.Shutdown() }) //nolint:errcheck
	h.mu.Lock()
	h.mocks[host] = m
	h.mu.Unlock()
	return m
}

// target builds a Target on host with quick test defaults; mod adjusts the
// config first.
func (h *harness) target(host string, mod func(*config.Target)) *Target {
	ct := config.Target{
		VirtualKey:     host,
		Provider:       config.ProviderOpenAI,
		BaseURL:        "http://" + host + "/v1",
		APIKey:         "sk-" + host,
		Timeout:        2 * time.Second,
		Retry:          config.Retry{Attempts: 1, InitialBackoffMs: 10},
		CircuitBreaker: config.CircuitBreaker{FailureThreshold: 5, SuccessThreshold: 1, MaxHalfThreshold: 1, Timeout: 30 * time.Second},
		Concurrency:    config.Concurrency{MaxConcurrency: 4, QueueSize: 4},
	}
	if mod != nil {
		mod(&ct)
	}
	tg, err := h.pool.Target(&ct)
	if err != nil {
		h.t.Fatal(err)
	}
	return tg
}

// recObserver records walk events.
type recObserver struct {
	mu       sync.Mutex
	attempts []string // "target:class:status"
	skips    []string
	fails    []string
	ends     chan Result
}

func newRec() *recObserver { return &recObserver{ends: make(chan Result, 4)} }

func (o *recObserver) Attempt(t *Target, c Class, status int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.attempts = append(o.attempts, t.Name+":"+c.String()+":"+itoa(status))
}
func (o *recObserver) Skip(t *Target, c Class) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.skips = append(o.skips, t.Name+":"+c.String())
}
func (o *recObserver) Failover(t *Target, c Class) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fails = append(o.fails, t.Name+":"+c.String())
}
func (o *recObserver) StreamEnd(r Result, _ time.Duration) { o.ends <- r }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

const chatBody = `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`

func chatCall(stream bool) *Call {
	return &Call{Surface: router.SurfaceChat, Stream: stream, Body: []byte(chatBody), Model: []byte("gpt-x")}
}

// walk runs one walk on a fresh RequestCtx carrying hdr as client headers.
func (h *harness) walk(call *Call, chain []*Target, timeout time.Duration, obs Observer, hdr ...string) (*fasthttp.RequestCtx, Result) {
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/chat/completions")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	req.SetBody(call.Body)
	rc := &fasthttp.RequestCtx{}
	rc.Init(&req, nil, nil)
	call.Header = &rc.Request.Header // as the hot path sets it
	res := walkWith(rc, call, chain, h.clk.now().Add(timeout), obs, h.clk)
	return rc, res
}

// ok answers 200 with a JSON body naming the host.
func ok(host string) func(*fasthttp.RequestCtx, int) {
	return func(ctx *fasthttp.RequestCtx, _ int) {
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"id":"` + host + `","object":"chat.completion"}`)
	}
}

func status(code int, body string, hdr ...string) func(*fasthttp.RequestCtx, int) {
	return func(ctx *fasthttp.RequestCtx, _ int) {
		for i := 0; i+1 < len(hdr); i += 2 {
			ctx.Response.Header.Set(hdr[i], hdr[i+1])
		}
		ctx.SetStatusCode(code)
		ctx.SetBodyString(body)
	}
}

// sse answers a stream made of events, with pause before each.
func sse(pause time.Duration, events ...string) func(*fasthttp.RequestCtx, int) {
	return func(ctx *fasthttp.RequestCtx, _ int) {
		ctx.SetContentType("text/event-stream")
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			for _, e := range events {
				time.Sleep(pause)
				w.WriteString(e) //nolint:errcheck
				if w.Flush() != nil {
					return
				}
			}
		})
	}
}

// streamBody reads a committed stream's body from a bare RequestCtx.
func streamBody(t *testing.T, rc *fasthttp.RequestCtx) string {
	t.Helper()
	s := rc.Response.BodyStream()
	if s == nil {
		t.Fatalf("no body stream; status %d body %s", rc.Response.StatusCode(), rc.Response.Body())
	}
	var sb strings.Builder
	buf := make([]byte, 1024)
	for {
		n, err := s.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String()
		}
	}
}

// quietLogger drops fasthttp's "error when serving connection" lines, which
// tests that cut connections on purpose would otherwise print.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// constMock starts a bare upstream named host that answers every request
// 200 with body and records nothing, so it allocates nothing of its own
// (for allocation tests and benchmarks).
func (h *harness) constMock(host string, body []byte) {
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBody(body) }}
	go srv.Serve(ln)                       //nolint:errcheck
	h.t.Cleanup(func() { srv.Shutdown() }) //nolint:errcheck
	h.mu.Lock()
	h.mocks[host] = &mock{ln: ln}
	h.mu.Unlock()
}
