package responsesws

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

// Server serves Responses API sockets: hotpath hands it each checked
// upgrade (Upgrade is a hotpath.SocketUpgrade), and it sends every
// response.create through http, the gateway's own fasthttp.Server. Safe
// for concurrent use; the zero value is not usable (New).
type Server struct {
	http   *fasthttp.Server
	limits func() Limits
	log    zerolog.Logger
	up     websocket.FastHTTPUpgrader

	// mu guards sockets and stopping; closing is closed by Shutdown.
	mu       sync.Mutex
	sockets  map[*socket]struct{}
	stopping bool
	closing  chan struct{}
	wg       sync.WaitGroup

	// served counts responses the sockets sent through the bridge (tests).
	served atomic.Int64
	// writeTimeout is writeTimeout but in tests.
	writeTimeout time.Duration
}

// Limits are the settings of the configuration served now that bound a
// socket: server.websocket, and server.max_request_bytes (the most a
// bridged request, a continuation's expansion included, may be).
type Limits struct {
	config.WebSocket
	MaxRequestBytes int
}

// New returns a Server bridging to http (whose Handler is the gateway's).
// limits returns the Limits of the configuration served now: it is read
// for every message, so a reload applies to open sockets. log receives one
// line per socket closed.
func New(http *fasthttp.Server, limits func() Limits, log zerolog.Logger) *Server {
	s := &Server{
		http:         http,
		limits:       limits,
		log:          log,
		sockets:      map[*socket]struct{}{},
		closing:      make(chan struct{}),
		writeTimeout: writeTimeout,
	}
	s.up = websocket.FastHTTPUpgrader{
		// The gateway's screen already held the Origin header against
		// server.allowed_origins, as for every request.
		CheckOrigin: func(*fasthttp.RequestCtx) bool { return true },
		Error:       handshakeError,
		// Off: Codex sends only the new items of a turn, so messages are
		// small; compressing each event would cost CPU on every event for
		// little, and a compressed message would slip under the size
		// limit (which counts the bytes as received).
		EnableCompression: false,
	}
	return s
}

// handshakeError answers a request that is not a valid WebSocket handshake
// in OpenAI's envelope.
func handshakeError(rc *fasthttp.RequestCtx, status int, reason error) {
	rc.Response.Header.Set("Sec-Websocket-Version", "13")
	rc.SetStatusCode(status)
	rc.SetContentType("application/json")
	r := refusal{status: status, typ: "invalid_request_error", code: "invalid_request", message: reason.Error()}
	b := appendError(nil, &r, nil)
	// The HTTP envelope is {"error":{…}}: the event's error object alone.
	rc.SetBody(append(append([]byte(`{"error":`), lookup(b, "error")...), '}'))
}

// Upgrade answers rc, a checked GET /v1/responses asking for a WebSocket
// from client key key ("" without auth): 101 and a socket served until
// either side closes it, or a refusal (a bad handshake, or the server is
// shutting down), reported by false.
func (s *Server) Upgrade(rc *fasthttp.RequestCtx, key string) bool {
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	if stopping {
		handshakeError(rc, fasthttp.StatusServiceUnavailable, errShuttingDown)
		return false
	}
	sk := newSocket(s, rc, key)
	err := s.up.Upgrade(rc, func(c *websocket.Conn) {
		sk.attach(c)
		if !s.register(sk) {
			closeNow(c, websocket.CloseGoingAway, "the gateway is shutting down")
			return
		}
		defer s.unregister(sk)
		sk.serve()
	})
	return err == nil
}

// register adds sk to the open sockets, unless Shutdown has begun.
func (s *Server) register(sk *socket) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.sockets[sk] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) unregister(sk *socket) {
	s.mu.Lock()
	delete(s.sockets, sk)
	s.mu.Unlock()
	s.wg.Done()
}

// Open returns the number of open sockets.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sockets)
}

// Shutdown stops taking sockets and responses: each socket finishes the
// response it is serving, if any, and is closed with 1001 (going away).
// It returns nil once every socket is closed, or ctx.Err() when ctx ends
// first, after closing the remaining sockets at once (their responses are
// canceled as when a client leaves).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.stopping {
		s.stopping = true
		close(s.closing)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for sk := range s.sockets {
		sk.abort()
	}
	s.mu.Unlock()
	<-done
	return ctx.Err()
}
