package e2e

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/mock"
)

// received is one request as an upstream mock saw it.
type received struct {
	method string
	uri    string // the request URI as sent (path escaped as on the wire)
	header http.Header
	body   []byte
}

// recorder keeps the requests a mock received. Safe for concurrent use.
type recorder struct {
	calls atomic.Int32
	mu    sync.Mutex
	reqs  []received
}

func (r *recorder) add(rq received) {
	r.mu.Lock()
	r.reqs = append(r.reqs, rq)
	r.mu.Unlock()
	r.calls.Add(1)
}

// all returns a copy of the requests received so far.
func (r *recorder) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.reqs...)
}

// last returns the last request received; it fails the test if none was.
func (r *recorder) last(t *testing.T) received {
	t.Helper()
	all := r.all()
	if len(all) == 0 {
		t.Fatal("the mock received no request")
	}
	return all[len(all)-1]
}

// n is the number of requests received.
func (r *recorder) n() int { return int(r.calls.Load()) }

func recordHTTP(rec *recorder, r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	rec.add(received{method: r.Method, uri: r.RequestURI, header: r.Header.Clone(), body: b})
	return b
}

// openaiMock is a mock server whose requests are recorded before the
// mock answers them (mock counts requests but keeps no headers).
type openaiMock struct {
	recorder
	m    *mock.Server
	srv  *fasthttp.Server
	addr string
}

// startOpenAIMock serves a mock named name on 127.0.0.1 that requires
// the bearer key, and closes it at the end of the test.
func startOpenAIMock(t *testing.T, name, key string) *openaiMock {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &openaiMock{m: mock.New(mock.Options{Name: name, APIKey: key, StreamEvents: 8}), addr: ln.Addr().String()}
	o.srv = &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		h := http.Header{}
		for k, v := range ctx.Request.Header.All() {
			h.Add(string(k), string(v))
		}
		o.add(received{
			method: string(ctx.Method()),
			uri:    string(ctx.RequestURI()),
			header: h,
			body:   append([]byte(nil), ctx.PostBody()...),
		})
		o.m.Handler(ctx)
	}}
	go func() { _ = o.srv.Serve(ln) }()
	t.Cleanup(func() { _ = o.srv.Shutdown() })
	return o
}

func (o *openaiMock) baseURL() string { return "http://" + o.addr + "/v1" }

// mockContent is the completion text mock answers with its default
// ResponseBytes (64): its word pattern, repeated.
var mockContent = strings.Repeat("the quick brown fox jumps over the lazy dog ", 2)[:64]

// Kinds of anthropicFailure.
const (
	// failStatus answers status with an Anthropic error body (the default).
	failStatus = iota
	// failCut closes the connection before any response byte.
	failCut
	// failSSEFirst answers 200 text/event-stream whose first event is an
	// error event of type typ.
	failSSEFirst
	// failSSEAfter answers 200 text/event-stream with message_start and
	// one text delta ("Hello"), then an error event of type typ.
	failSSEAfter
	// failSSEAfterStart answers 200 text/event-stream with message_start
	// and content_block_start (no text yet), then an error event of type
	// typ.
	failSSEAfterStart
)

// anthropicFailure is how the Anthropic mock fails instead of answering.
// retryAfter, when not empty, is sent as retry-after.
type anthropicFailure struct {
	kind       int
	status     int
	typ, msg   string
	retryAfter string
}

// anthropicMock is a minimal Anthropic Messages API: POST /v1/messages,
// with x-api-key and anthropic-version checked as the real API does.
type anthropicMock struct {
	recorder
	srv  *httptest.Server
	key  string
	fail atomic.Pointer[anthropicFailure]

	// While holding, requests wait for gate (closed by release or at the
	// end of the test) or for the caller to go away before being served.
	holding atomic.Bool
	gate    chan struct{}
	once    sync.Once

	// gap is a pause (ns) before each text delta of a stream. Default 0.
	gap atomic.Int64

	// limited says fail applies to left more requests only (failTimes).
	limited atomic.Bool
	left    atomic.Int64
}

// anthropicText is what the Anthropic mock answers, in pieces for streams.
var anthropicPieces = []string{"Hello", " from", " Anthropic", "."}

func anthropicText() string { return strings.Join(anthropicPieces, "") }

func startAnthropicMock(t *testing.T, key string) *anthropicMock {
	t.Helper()
	a := &anthropicMock{key: key, gate: make(chan struct{})}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(func() {
		a.release()
		a.srv.Close()
	})
	return a
}

// hold makes later requests wait (see anthropicMock.holding).
func (a *anthropicMock) hold() { a.holding.Store(true) }

// release lets held requests and later ones through.
func (a *anthropicMock) release() {
	a.holding.Store(false)
	a.once.Do(func() { close(a.gate) })
}

// failWith makes every later request fail with f; nil restores answers.
func (a *anthropicMock) failWith(f *anthropicFailure) {
	a.limited.Store(false)
	a.fail.Store(f)
}

// failTimes makes the next n requests fail with f, then answers again.
func (a *anthropicMock) failTimes(f *anthropicFailure, n int) {
	a.left.Store(int64(n))
	a.limited.Store(true)
	a.fail.Store(f)
}

// failure returns the failure to apply to this request, or nil.
func (a *anthropicMock) failure() *anthropicFailure {
	f := a.fail.Load()
	if f != nil && a.limited.Load() && a.left.Add(-1) < 0 {
		return nil
	}
	return f
}

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	_, _ = w.Write(b)
}

func (a *anthropicMock) serve(w http.ResponseWriter, r *http.Request) {
	body := recordHTTP(&a.recorder, r)
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/v1/messages":
		anthropicError(w, 404, "not_found_error", "no route "+r.Method+" "+r.URL.Path)
		return
	case r.Header.Get("X-Api-Key") != a.key:
		anthropicError(w, 401, "authentication_error", "invalid x-api-key")
		return
	case r.Header.Get("Anthropic-Version") != "2023-06-01":
		anthropicError(w, 400, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	if a.holding.Load() {
		select {
		case <-a.gate:
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second):
		}
	}
	fl, _ := w.(http.Flusher)
	event := func(typ string, data any) {
		b, _ := json.Marshal(data)
		_, _ = io.WriteString(w, "event: "+typ+"\ndata: "+string(b)+"\n\n")
		if fl != nil {
			fl.Flush()
		}
	}
	errorEvent := func(f *anthropicFailure) {
		event("error", map[string]any{"type": "error", "error": map[string]string{"type": f.typ, "message": f.msg}})
	}
	if f := a.failure(); f != nil {
		switch f.kind {
		case failCut:
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
		case failSSEFirst:
			w.Header().Set("Content-Type", "text/event-stream")
			errorEvent(f)
		case failSSEAfterStart:
			w.Header().Set("Content-Type", "text/event-stream")
			a.messageStart(event, claudeModel)
			errorEvent(f)
		case failSSEAfter:
			w.Header().Set("Content-Type", "text/event-stream")
			a.messageStart(event, claudeModel)
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]string{"type": "text_delta", "text": "Hello"}})
			errorEvent(f)
		case failStatus:
			if f.retryAfter != "" {
				w.Header().Set("Retry-After", f.retryAfter)
			}
			anthropicError(w, f.status, f.typ, f.msg)
		default:
			anthropicError(w, 500, "api_error", "mock: unknown failure kind")
		}
		return
	}
	var req struct {
		Model     string `json:"model"`
		Stream    bool   `json:"stream"`
		MaxTokens int    `json:"max_tokens"`
		Messages  []any  `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || req.MaxTokens <= 0 || len(req.Messages) == 0 {
		anthropicError(w, 400, "invalid_request_error", "mock: bad Messages request body")
		return
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{
			"id": "msg_e2e", "type": "message", "role": "assistant", "model": req.Model,
			"content":     []any{map[string]string{"type": "text", "text": anthropicText()}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": 5, "output_tokens": 4},
		})
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	a.messageStart(event, req.Model)
	event("ping", map[string]string{"type": "ping"})
	for _, p := range anthropicPieces {
		if d := time.Duration(a.gap.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]string{"type": "text_delta", "text": p}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 4}})
	event("message_stop", map[string]string{"type": "message_stop"})
}

// messageStart writes the message_start and content_block_start events of
// a stream.
func (a *anthropicMock) messageStart(event func(string, any), model string) {
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_e2e", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 5, "output_tokens": 1},
	}})
	event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]string{"type": "text", "text": ""}})
}

// bedrockFailure is an error the Bedrock mock answers with: status, an
// x-amzn-ErrorType and a message; retryAfter, when not empty, is sent as
// Retry-After.
//
// When exception is set, a converse-stream request is answered 200
// instead: with streamAfter < 0, an exception frame of that
// :exception-type first; else messageStart and streamAfter text deltas,
// then the exception frame.
type bedrockFailure struct {
	status     int
	errType    string
	msg        string
	retryAfter string

	exception   string
	streamAfter int
}

// bedrockMock is a minimal Bedrock runtime: POST /model/{id}/converse and
// /model/{id}/converse-stream with a Bedrock API key as bearer token.
type bedrockMock struct {
	recorder
	srv  *httptest.Server
	key  string
	fail atomic.Pointer[bedrockFailure]
}

// failWith makes every later request fail with f; nil restores answers.
func (b *bedrockMock) failWith(f *bedrockFailure) { b.fail.Store(f) }

// bedrockPieces is what the Bedrock mock answers, in pieces for streams.
var bedrockPieces = []string{"Hi", " from", " Bedrock"}

func bedrockText() string { return strings.Join(bedrockPieces, "") }

func startBedrockMock(t *testing.T, key string) *bedrockMock {
	t.Helper()
	b := &bedrockMock{key: key}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

var bedrockPath = regexp.MustCompile(`^/model/([^/]+)/(converse|converse-stream)$`)

func bedrockError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"message": msg})
	_, _ = w.Write(b)
}

func (b *bedrockMock) serve(w http.ResponseWriter, r *http.Request) {
	body := recordHTTP(&b.recorder, r)
	m := bedrockPath.FindStringSubmatch(r.URL.EscapedPath())
	switch {
	case r.Method != http.MethodPost || m == nil:
		bedrockError(w, 404, "no route "+r.Method+" "+r.URL.EscapedPath())
		return
	case r.Header.Get("Authorization") != "Bearer "+b.key:
		bedrockError(w, 403, "The security token included in the request is invalid.")
		return
	}
	f := b.fail.Load()
	if f != nil && (f.exception == "" || m[2] != "converse-stream") {
		w.Header().Set("X-Amzn-Errortype", f.errType)
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		bedrockError(w, f.status, f.msg)
		return
	}
	var req struct {
		Messages []any `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		bedrockError(w, 400, "mock: bad Converse request body")
		return
	}
	if m[2] == "converse" {
		w.Header().Set("Content-Type", "application/json")
		out, _ := json.Marshal(map[string]any{
			"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": []any{map[string]string{"text": bedrockText()}}}},
			"stopReason": "end_turn",
			"usage":      map[string]int{"inputTokens": 3, "outputTokens": 3, "totalTokens": 6},
		})
		_, _ = w.Write(out)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	enc := eventstream.NewEncoder()
	fl, _ := w.(http.Flusher)
	frame := func(typ, payload string) {
		var msg eventstream.Message
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Headers.Set(":event-type", eventstream.StringValue(typ))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Payload = []byte(payload)
		_ = enc.Encode(w, msg)
		if fl != nil {
			fl.Flush()
		}
	}
	if f != nil && f.streamAfter < 0 {
		b.exceptionFrame(enc, w, f)
		return
	}
	frame("messageStart", `{"role":"assistant"}`)
	for i, p := range bedrockPieces {
		if f != nil && i == f.streamAfter {
			b.exceptionFrame(enc, w, f)
			return
		}
		d, _ := json.Marshal(map[string]any{"contentBlockIndex": 0, "delta": map[string]string{"text": p}})
		frame("contentBlockDelta", string(d))
	}
	frame("contentBlockStop", `{"contentBlockIndex":0}`)
	frame("messageStop", `{"stopReason":"end_turn"}`)
	frame("metadata", `{"usage":{"inputTokens":3,"outputTokens":3,"totalTokens":6},"metrics":{"latencyMs":1}}`)
}

// exceptionFrame writes the exception frame of f.
func (b *bedrockMock) exceptionFrame(enc *eventstream.Encoder, w io.Writer, f *bedrockFailure) {
	var msg eventstream.Message
	msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
	msg.Headers.Set(":exception-type", eventstream.StringValue(f.exception))
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	msg.Payload, _ = json.Marshal(map[string]string{"message": f.msg})
	_ = enc.Encode(w, msg)
}
