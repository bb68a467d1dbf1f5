package e2e

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/mock"
)

// The soak's upstreams (soak_test.go): mocks whose failure mode
// flips every few hundred milliseconds, and a server that draws a
// misbehaviour per request; all record what they were sent.

// soakLedger collects what the upstreams saw.
type soakLedger struct {
	mu         sync.Mutex
	calls      map[string]int
	violations []string
}

// saw records that target got the request with X-Request-Id id, whose
// middle part names the targets its rule allows ("soak-ab-17"), carrying
// the credential auth (which must be the target's own).
func (l *soakLedger) saw(target, id, auth string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls[target]++
	parts := strings.Split(id, "-")
	if len(parts) != 3 || parts[0] != "soak" || !strings.Contains(parts[1], target) {
		l.violations = append(l.violations, target+" got "+strconv.Quote(id))
	}
	if auth != "Bearer key-"+target {
		l.violations = append(l.violations, target+" got "+strconv.Quote(id)+" with another credential")
	}
}

// soakMock is a mock behind a recording front, owned by the soak (not
// closed by t.Cleanup, so the goroutine check can run after it closed).
type soakMock struct {
	m   *mock.Server
	srv *fasthttp.Server
	url string
}

func startSoakMock(t *testing.T, name string, l *soakLedger) *soakMock {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &soakMock{m: mock.New(mock.Options{Name: name, APIKey: "key-" + name, StreamEvents: 6}),
		url: "http://" + ln.Addr().String() + "/v1"}
	s.srv = &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		l.saw(name, string(ctx.Request.Header.Peek("X-Request-Id")), string(ctx.Request.Header.Peek("Authorization")))
		s.m.Handler(ctx)
	}, Logger: quietFastLogger{}}
	go func() { _ = s.srv.Serve(ln) }()
	return s
}

type quietFastLogger struct{}

func (quietFastLogger) Printf(string, ...any) {}

// soakChaos flips a mock between failure modes until stop closes.
func soakChaos(m *mock.Server, seed uint64, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	rng := rand.New(rand.NewPCG(seed, 1))
	modes := []func(){
		func() { m.Reset() },
		func() { m.Reset() },
		func() { m.Reset() },
		func() { m.Reset() },
		func() { m.Fail(mock.Failure{Status: 503}) },
		func() { m.Fail(mock.Failure{Status: 500, Count: 3}) },
		func() { m.Fail(mock.Failure{Status: 429, RetryAfter: 1}) },
		func() { m.Fail(mock.Failure{Kind: mock.KindCut}) },
		func() { m.Fail(mock.Failure{Kind: mock.KindCut, After: 3}) },
		func() { m.Fail(mock.Failure{Kind: mock.KindSSEError, After: 2}) },
		func() { m.Fail(mock.Failure{Kind: mock.KindSSEError}) },
		func() { m.Reset(); m.SetLatency(1500 * time.Millisecond) }, // past the 800ms attempt timeout
	}
	for {
		modes[rng.IntN(len(modes))]()
		select {
		case <-stop:
			m.Reset()
			return
		case <-time.After(time.Duration(150+rng.IntN(300)) * time.Millisecond):
		}
	}
}

// chaosServer is target c: every request draws its own misbehaviour.
func chaosServer(l *soakLedger) *httptest.Server {
	chunk := func(model, text string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"` + model +
			`","choices":[{"index":0,"delta":{"content":"` + text + `"},"finish_reason":null}]}` + "\n\n"
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.saw("c", r.Header.Get("X-Request-Id"), r.Header.Get("Authorization"))
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		hijack := func(raw string, reset bool) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			_, _ = io.WriteString(conn, raw)
			if tc, ok := conn.(*net.TCPConn); ok && reset {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
		}
		switch rand.IntN(16) { // half of them misbehave
		case 0: // reset before any byte
			hijack("", true)
		case 1: // hang past the attempt timeout (bounded)
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
		case 2: // partial body: declares more than it sends
			hijack("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"id\":\"c1\",\"choi", false)
		case 3: // garbage instead of HTTP
			hijack("\x00\x16\x03garbage\r\n\r\n{{{", false)
		case 4:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			_, _ = io.WriteString(w, `{"error":{"message":"c is down","type":"server_error","param":null,"code":null}}`)
		case 5:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(429)
			_, _ = io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`)
		case 6: // a stream cut mid-way (or a JSON body cut after its head)
			if !req.Stream {
				hijack("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"id\"", true)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, chunk(req.Model, "partial "))
			http.NewResponseController(w).Flush() //nolint:errcheck // a test upstream
			panic(http.ErrAbortHandler)
		case 7: // garbage frames in a stream
			if req.Stream {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, chunk(req.Model, "ok ")+"data: {not json\n\n"+"\x00\x01\x02\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, chaosBadJSON)
		default:
			if req.Stream {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, chunk(req.Model, "hello ")+chunk(req.Model, "from c")+"data: [DONE]\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"`+req.Model+
				`","choices":[{"index":0,"message":{"role":"assistant","content":"hello from c"},"finish_reason":"stop"}]}`)
		}
	}))
}

// chaosBadJSON is target c's malformed 200 body.
const chaosBadJSON = `{"id": nope`
