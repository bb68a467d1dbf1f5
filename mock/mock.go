// Package mock is an OpenAI-compatible upstream for benchmarks, tests and
// demos. It answers POST /v1/chat/completions (JSON or SSE),
// /v1/completions (JSON or SSE), /v1/embeddings, /v1/images/generations and
// GET /v1/models with canned, well-formed responses whose size, latency and
// stream shape are configurable. Every response carries an X-Mock-Name header
// and, where the OpenAI shape has one, "system_fingerprint":"<name>", so a
// caller can tell which mock answered; the "model" field echoes the model the
// request named, so a caller can see the id actually sent upstream.
//
// Failures can be injected by Options (a random fail rate) or at run time
// through the admin endpoints (see admin.go), and GET /_mock/stats counts the
// requests received. The mock never echoes request headers: credentials sent
// to it are checked (Options.APIKey) but never reflected in a response.
package mock

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// Options configures a Server. The zero value is a fast mock named "mock"
// answering immediately with a short completion and 20-event streams.
type Options struct {
	// Name identifies this mock in the X-Mock-Name header,
	// "system_fingerprint" and /v1/models "owned_by". Default "mock".
	Name string
	// Latency delays every API response (for a stream: the first event).
	// Default 0.
	Latency time.Duration
	// ResponseBytes is the length of the generated completion text (chat and
	// completions) and, divided by 8, the embedding dimension (min 1).
	// Default 64.
	ResponseBytes int
	// StreamEvents is the number of chunk events in a stream, before
	// "data: [DONE]". Default 20; the last chunk carries finish_reason "stop".
	StreamEvents int
	// StreamInterval is the pause between two stream events. Default 0.
	StreamInterval time.Duration
	// FailRate is the probability in [0,1] that an API request fails with
	// FailStatus. Default 0.
	FailRate float64
	// FailStatus is the status of FailRate failures. Default 503.
	FailStatus int
	// APIKey, when non-empty, is the bearer token every API request must
	// carry; others get 401 invalid_api_key. Default "" (not checked).
	APIKey string
	// Models is the list served by GET /v1/models. Default ["mock-model"].
	Models []string
}

func (o *Options) withDefaults() Options {
	out := *o
	if out.Name == "" {
		out.Name = "mock"
	}
	if out.ResponseBytes <= 0 {
		out.ResponseBytes = 64
	}
	if out.StreamEvents <= 0 {
		out.StreamEvents = 20
	}
	if out.FailStatus == 0 {
		out.FailStatus = 503
	}
	if len(out.Models) == 0 {
		out.Models = []string{"mock-model"}
	}
	return out
}

// Server is a mock upstream. Its handler is safe for concurrent use; the
// counters it keeps are atomics read by Stats.
type Server struct {
	opts    Options
	content string // completion text, ResponseBytes long
	models  []byte // the /v1/models body

	latency atomic.Int64 // current latency in ns; admin can change it
	inject  atomic.Pointer[injection]
	left    atomic.Int64 // failures left for a counted injection

	stats counters
	seq   atomic.Uint64 // response id sequence

	srv  *fasthttp.Server
	addr atomic.Pointer[string] // listener address, set by Start/Serve

	// batchAPI is the batch APIs' state (batches.go), made on first use.
	batchOnce sync.Once
	batchAPI  *batchAPI
}

// New returns a Server with opts (defaults applied). Serve it with Serve or
// use Handler directly.
func New(opts Options) *Server {
	o := opts.withDefaults()
	s := &Server{opts: o, content: makeContent(o.ResponseBytes)}
	s.latency.Store(int64(o.Latency))
	s.models = appendModels(nil, o)
	s.srv = &fasthttp.Server{
		Handler: s.Handler,
		Name:    "switchyard-mock",
		// A mock upstream must never be the bottleneck of a benchmark, nor
		// drop the idle keep-alive connections a proxy pools.
		IdleTimeout:           0,
		ReadBufferSize:        16 << 10,
		NoDefaultDate:         true,
		NoDefaultServerHeader: false,
		MaxRequestBodySize:    1 << 30,
		// Batch uploads are read as streams (batches.go).
		StreamRequestBody: true,
		// Connection errors are expected (injected cuts, clients that go
		// away) and say nothing about the system under test.
		Logger: quietLogger{},
	}
	return s
}

// Start listens on addr (e.g. "127.0.0.1:0") and serves in a goroutine.
func Start(addr string, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return nil, err
	}
	s := New(opts)
	s.setAddr(ln)
	go func() { _ = s.Serve(ln) }()
	return s, nil
}

// Serve serves ln until Close; it returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.setAddr(ln)
	err := s.srv.Serve(ln)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Addr is the listener's address ("127.0.0.1:port"); "" before Serve.
func (s *Server) Addr() string {
	if a := s.addr.Load(); a != nil {
		return *a
	}
	return ""
}

func (s *Server) setAddr(ln net.Listener) {
	a := ln.Addr().String()
	s.addr.Store(&a)
}

// BaseURL is the OpenAI-style base URL of the mock, "http://ADDR/v1".
func (s *Server) BaseURL() string { return "http://" + s.Addr() + "/v1" }

// Name is the mock's name (Options.Name with defaults).
func (s *Server) Name() string { return s.opts.Name }

// Close stops the listener and waits for in-flight requests.
func (s *Server) Close() error { return s.srv.Shutdown() }

// Handler is the fasthttp handler of the mock.
func (s *Server) Handler(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.Set("X-Mock-Name", s.opts.Name)
	path := ctx.Path()
	if len(path) > 7 && string(path[:7]) == "/_mock/" {
		s.admin(ctx, string(path[7:]))
		return
	}
	if s.batchPath(ctx, string(path)) {
		return
	}
	var surface int
	switch string(path) {
	case "/v1/chat/completions":
		surface = surfChat
	case "/v1/completions":
		surface = surfCompletions
	case "/v1/embeddings":
		surface = surfEmbeddings
	case "/v1/images/generations":
		surface = surfImages
	case "/v1/models":
		surface = surfModels
	default:
		s.stats.notFound.Add(1)
		writeError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "not_found",
			"mock: unknown path "+strconv.Quote(string(path)))
		return
	}
	s.stats.requests.Add(1)
	s.stats.bySurface[surface].Add(1)

	wantMethod := fasthttp.MethodPost
	if surface == surfModels {
		wantMethod = fasthttp.MethodGet
	}
	if string(ctx.Method()) != wantMethod {
		writeError(ctx, fasthttp.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
			"mock: use "+wantMethod)
		return
	}
	if s.opts.APIKey != "" && !s.authorized(ctx) {
		s.stats.unauthorized.Add(1)
		writeError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
			"mock: incorrect API key provided")
		return
	}
	if surface == surfModels {
		ctx.SetContentType("application/json")
		ctx.SetBody(s.models)
		return
	}

	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(ctx.PostBody())
	if err != nil || v.Type() != fastjson.TypeObject {
		s.stats.badRequests.Add(1)
		writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request",
			"mock: body is not a JSON object")
		return
	}
	model := v.GetStringBytes("model")
	if len(model) == 0 {
		s.stats.badRequests.Add(1)
		writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request",
			"mock: missing model")
		return
	}
	stream := v.GetBool("stream") && (surface == surfChat || surface == surfCompletions)

	if inj := s.takeFailure(); inj != nil {
		s.stats.failed.Add(1)
		s.fail(ctx, inj, surface, string(model), stream)
		return
	}
	if stream {
		s.stats.streams.Add(1)
		r := s.stream(ctx, surface, string(model), time.Duration(s.latency.Load()), nil)
		// As OpenAI: a final chunk with empty choices carries the usage
		// when the client asked for it.
		r.usage = v.GetBool("stream_options", "include_usage")
		return
	}
	s.sleep()
	id := s.seq.Add(1)
	b := bufPool.Get()
	switch surface {
	case surfChat:
		b.B = s.appendChat(b.B[:0], id, model)
	case surfCompletions:
		b.B = s.appendCompletion(b.B[:0], id, model)
	case surfEmbeddings:
		b.B = s.appendEmbeddings(b.B[:0], model, v.Get("input"))
	case surfImages:
		b.B = s.appendImages(b.B[:0], v.GetInt("n"))
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(b.B) // copies
	bufPool.Put(b)
}

func (s *Server) authorized(ctx *fasthttp.RequestCtx) bool {
	auth := ctx.Request.Header.Peek(fasthttp.HeaderAuthorization)
	const prefix = "Bearer "
	return len(auth) == len(prefix)+len(s.opts.APIKey) &&
		string(auth[:len(prefix)]) == prefix && string(auth[len(prefix):]) == s.opts.APIKey
}

func (s *Server) sleep() {
	if d := time.Duration(s.latency.Load()); d > 0 {
		time.Sleep(d)
	}
}

var parserPool fastjson.ParserPool

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
