package hotpath

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/upstream"
)

// fault is how a mock upstream answers.
type fault int32

const (
	faultNone          fault = iota // 200 with an OpenAI-shaped body
	fault503                        // 503 server error
	fault429                        // 429 with Retry-After: 30
	fault408                        // 408 request timeout
	fault400                        // 400 invalid request (not failover-safe)
	fault401                        // 401 bad key (not failover-safe; 502 to the client)
	faultContextLength              // 400 context_length_exceeded (failover-safe)
	faultHang                       // answers only after the attempt timeout
	faultReset                      // closes the connection without answering
	numFaults
)

var faultNames = [...]string{"ok", "503", "429", "408", "400", "401", "context_length", "hang", "reset"}

func (f fault) String() string { return faultNames[f] }

// seenRequest is what a mock upstream recorded of one request.
type seenRequest struct {
	Path, Auth, Metadata, ClientKey, RequestID, Body string
}

// mockUpstream is a local OpenAI-compatible server on 127.0.0.1 that counts
// and records its calls and answers according to its current fault.
type mockUpstream struct {
	name  string
	url   string // base URL including /v1
	calls atomic.Int64
	fault atomic.Int32
	// hang is how long faultHang waits before answering (released early at
	// cleanup so the server can stop).
	hang    time.Duration
	release chan struct{}

	// retryAfter is the Retry-After of fault429 ("30" unless a test sets it
	// before the first request).
	retryAfter string
	// log, when set, records every call in arrival order across mocks.
	log *callLog

	mu   sync.Mutex
	seen []seenRequest
}

// callLog records calls to several mocks in the order they arrived.
type callLog struct {
	mu    sync.Mutex
	names []string
}

func (l *callLog) add(name string) {
	l.mu.Lock()
	l.names = append(l.names, name)
	l.mu.Unlock()
}

// since returns the calls recorded after the first n.
func (l *callLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.names[n:]...)
}

func (l *callLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.names)
}

func startMock(t testing.TB, name string) *mockUpstream {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &mockUpstream{name: name, url: "http://" + ln.Addr().String() + "/v1", hang: 3 * time.Second, retryAfter: "30", release: make(chan struct{})}
	srv := &fasthttp.Server{Handler: m.serve, NoDefaultServerHeader: true, Logger: quietLogger{}}
	go srv.Serve(ln) //nolint:errcheck // ends at Shutdown
	t.Cleanup(func() {
		close(m.release)
		_ = srv.Shutdown()
	})
	return m
}

func (m *mockUpstream) setFault(f fault) { m.fault.Store(int32(f)) }

func (m *mockUpstream) requests() []seenRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]seenRequest(nil), m.seen...)
}

func (m *mockUpstream) serve(rc *fasthttp.RequestCtx) {
	m.calls.Add(1)
	if m.log != nil {
		m.log.add(m.name)
	}
	m.mu.Lock()
	m.seen = append(m.seen, seenRequest{
		Path:      string(rc.Path()),
		Auth:      string(rc.Request.Header.Peek("Authorization")),
		Metadata:  string(rc.Request.Header.Peek("X-Gateway-Metadata")),
		ClientKey: string(rc.Request.Header.Peek("X-Client-Key")),
		RequestID: string(rc.Request.Header.Peek("X-Request-Id")),
		Body:      string(rc.PostBody()),
	})
	m.mu.Unlock()

	switch fault(m.fault.Load()) {
	case fault503:
		openAIError(rc, 503, "overloaded", "server_error", "")
	case fault429:
		rc.Response.Header.Set("Retry-After", m.retryAfter)
		openAIError(rc, 429, "slow down", "rate_limit_error", "rate_limit_exceeded")
	case fault408:
		openAIError(rc, 408, "too slow", "server_error", "")
	case fault400:
		openAIError(rc, 400, "bad temperature from "+m.name, "invalid_request_error", "invalid_value")
	case fault401:
		openAIError(rc, 401, "bad key", "invalid_request_error", "invalid_api_key")
	case faultContextLength:
		openAIError(rc, 400, "too many tokens", "invalid_request_error", "context_length_exceeded")
	case faultHang:
		select {
		case <-time.After(m.hang):
		case <-m.release:
		}
		m.answer(rc)
	case faultReset:
		_ = rc.Conn().Close()
	default:
		m.answer(rc)
	}
}

func openAIError(rc *fasthttp.RequestCtx, status int, msg, typ, code string) {
	rc.SetStatusCode(status)
	rc.SetContentType("application/json")
	c := "null"
	if code != "" {
		c = `"` + code + `"`
	}
	rc.SetBodyString(`{"error":{"message":"` + msg + `","type":"` + typ + `","param":null,"code":` + c + `}}`)
}

// answer writes a successful OpenAI-shaped answer naming the mock, so a
// test can tell which upstream served it.
func (m *mockUpstream) answer(rc *fasthttp.RequestCtx) {
	var p fastjson.Parser
	v, _ := p.ParseBytes(rc.PostBody())
	model := "unknown"
	stream := false
	if v != nil {
		model = string(v.GetStringBytes("model"))
		stream = v.GetBool("stream")
	}
	rc.SetContentType("application/json")
	switch string(rc.Path()) {
	case "/v1/chat/completions":
		if stream {
			rc.SetContentType("text/event-stream")
			chunk := func(delta, finish string) string {
				return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"` + model +
					`","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
			}
			rc.SetBodyString(chunk(`{"role":"assistant","content":"hello "}`, "null") +
				chunk(`{"content":"from `+m.name+`"}`, "null") + chunk(`{}`, `"stop"`) + "data: [DONE]\n\n")
			return
		}
		rc.SetBodyString(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"` + model +
			`","choices":[{"index":0,"message":{"role":"assistant","content":"hello from ` + m.name +
			`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}}`)
	case "/v1/completions":
		if stream {
			rc.SetContentType("text/event-stream")
			chunk := func(text, finish string) string {
				return `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"` + model +
					`","choices":[{"index":0,"text":"` + text + `","finish_reason":` + finish + `}]}` + "\n\n"
			}
			rc.SetBodyString(chunk("hello ", "null") + chunk("from "+m.name, `"stop"`) + "data: [DONE]\n\n")
			return
		}
		rc.SetBodyString(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"` + model +
			`","choices":[{"index":0,"text":"hello from ` + m.name + `","finish_reason":"stop"}]}`)
	case "/v1/embeddings":
		rc.SetBodyString(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":"` +
			model + `","usage":{"prompt_tokens":1,"total_tokens":1}}`)
	case "/v1/images/generations":
		rc.SetBodyString(`{"created":1,"data":[{"url":"https://example.invalid/` + m.name + `.png"}]}`)
	default:
		openAIError(rc, 404, "no such path on mock", "invalid_request_error", "")
	}
}

// testGateway is a Gateway served on an in-memory listener (for the
// fasthttp test client) and on a 127.0.0.1 port (for the official client).
type testGateway struct {
	t      testing.TB
	g      *Gateway
	pool   *upstream.Pool
	srv    *fasthttp.Server
	addr   string // 127.0.0.1:port
	client *fasthttp.Client
}

// mocks maps "{{name}}" placeholders in a config to mock base URLs.
func expandMocks(yaml string, mocks ...*mockUpstream) string {
	var pairs []string
	for _, m := range mocks {
		pairs = append(pairs, "{{"+m.name+"}}", m.url)
	}
	return strings.NewReplacer(pairs...).Replace(yaml)
}

func mustParse(t testing.TB, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatalf("config:\n%s\n%v", yaml, err)
	}
	return cfg
}

func startGateway(t testing.TB, yaml string, mocks ...*mockUpstream) *testGateway {
	t.Helper()
	pool := upstream.NewPool()
	st, err := Build(mustParse(t, expandMocks(yaml, mocks...)), pool, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	g := New(st)
	tg := &testGateway{t: t, g: g, pool: pool, srv: NewServer(g, quietLogger{}, st.Config.Server.ReduceMemoryUsage)}
	mem := fasthttputil.NewInmemoryListener()
	tcp, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tg.addr = tcp.Addr().String()
	go tg.srv.Serve(mem) //nolint:errcheck // ends at Shutdown
	go tg.srv.Serve(tcp) //nolint:errcheck
	tg.client = &fasthttp.Client{
		Dial:                          func(string) (net.Conn, error) { return mem.Dial() },
		DisableHeaderNamesNormalizing: false,
		ReadTimeout:                   20 * time.Second,
	}
	t.Cleanup(func() { _ = tg.srv.Shutdown() })
	return tg
}

// reload builds a State from yaml on the same pool and stores it.
func (tg *testGateway) reload(yaml string, mocks ...*mockUpstream) {
	tg.t.Helper()
	st, err := Build(mustParse(tg.t, expandMocks(yaml, mocks...)), tg.pool, time.Unix(1700000000, 0))
	if err != nil {
		tg.t.Fatal(err)
	}
	tg.g.Store(st)
	tg.pool.Retain(st.Targets) // as main does: drop identities no config uses
}

// response is a finished answer, copied out of fasthttp's pooled objects.
type response struct {
	Status int
	Header map[string]string
	Body   string
}

// do sends one request; hdr holds name, value pairs.
func (tg *testGateway) do(method, path, body string, hdr ...string) response {
	tg.t.Helper()
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://gateway" + path)
	if body != "" {
		req.Header.SetContentType("application/json")
		req.SetBodyString(body)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if err := tg.client.Do(req, resp); err != nil {
		tg.t.Fatalf("%s %s: %v", method, path, err)
	}
	r := response{Status: resp.StatusCode(), Header: map[string]string{}, Body: string(resp.Body())}
	for k, v := range resp.Header.All() {
		r.Header[string(k)] = string(v)
	}
	return r
}

// envelope is the expected OpenAI error body.
func envelope(message, typ, code string) string {
	return string(upstream.AppendError(nil, message, typ, code))
}

func netDial(addr string) (net.Conn, error) { return net.DialTimeout("tcp4", addr, 5*time.Second) }

func bufioReader(c net.Conn) *bufio.Reader {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return bufio.NewReader(c)
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// quietLogger drops fasthttp's connection-level error lines, which tests
// provoke on purpose (oversized bodies, broken requests).
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// answeringUpstream starts a loopback fasthttp server that answers every
// request with answer, shut down when tb ends, and returns its listener.
func answeringUpstream(tb testing.TB, answer []byte) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) { rc.SetBody(answer) }}
	go srv.Serve(ln) //nolint:errcheck // ends at Shutdown
	tb.Cleanup(func() { _ = srv.Shutdown() })
	return ln
}
