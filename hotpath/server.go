package hotpath

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// Server settings that are not configurable (docs/configuration.md, Configuration reference names listen,
// max_request_bytes, request_timeout and shutdown_timeout; NewServer also
// takes server.reduce_memory_usage).
const (
	// ReadTimeout bounds reading one whole request, headers and body. A
	// 10 MiB body at 1.5 Mbit/s still fits; a client trickling bytes to
	// hold a connection does not.
	ReadTimeout = 60 * time.Second
	// IdleTimeout bounds waiting for the next request on a keep-alive
	// connection.
	IdleTimeout = 120 * time.Second
	// ReadBufferSize is the per-connection read buffer, which is also the
	// largest request head fasthttp accepts. X-Gateway-Metadata alone may
	// be 4096 bytes (docs/routing.md, 2), and clients send bearer tokens, cookies
	// and tracing headers besides, so the 4 KiB default is too small. Each
	// idle keep-alive connection holds it, unless server.reduce_memory_usage
	// is on (see NewServer).
	ReadBufferSize = 32 << 10
	// ResponseWriteTimeout bounds writing one non-streamed answer to the
	// client (a streamed one: each event, with the target's timeout).
	ResponseWriteTimeout = 60 * time.Second
	// FallbackMaxRequestBytes caps a body when no configuration is loaded
	// (docs/configuration.md, Configuration reference default, 10 MiB).
	FallbackMaxRequestBytes = config.DefaultMaxRequestBytes
)

// NewServer returns the fasthttp.Server that serves g. logger receives
// fasthttp's own connection-level errors (nil: fasthttp's default, the
// standard log package). reduceMemoryUsage is server.reduce_memory_usage of
// the configuration the process started with (fixed for the server's life).
// The caller owns Serve and Shutdown; it should call g.SetDraining(true)
// before Shutdown so /readyz fails first.
//
// The body limit follows reloads: HeaderReceived reads max_request_bytes
// from the State current when a request's headers arrive, so fasthttp
// refuses an oversized body (by its Content-Length, before reading it) with
// the limit the operator configured last, and the handler checks again
// against the State it routes on. The server's own MaxRequestBodySize only
// applies before the first State is stored.
func NewServer(g *Gateway, logger fasthttp.Logger, reduceMemoryUsage bool) *fasthttp.Server {
	g.bufferedBodies.Store(reduceMemoryUsage)
	return &fasthttp.Server{
		Handler: g.Handler,
		// Render fasthttp's own request errors (oversized body, malformed
		// request, headers too large, read timeout) in the OpenAI envelope.
		ErrorHandler: g.errorHandler,
		// Per-request body limit from the current State; see above.
		HeaderReceived: g.headerReceived,
		// fasthttp writes "100 Continue" before the handler runs, under
		// whatever write deadline the connection's previous answer left
		// (WriteTimeout, or a stream's last one); arm a fresh one first.
		ExpectHandler: g.expectContinue,
		// No Server header: it only advertises the implementation.
		Name:                  "",
		NoDefaultServerHeader: true,
		Logger:                logger,
		// fasthttp's error log lines must not quote request bytes: they may
		// hold a client's key or prompt.
		SecureErrorLogMessage: true,
		ReadTimeout:           ReadTimeout,
		IdleTimeout:           IdleTimeout,
		// fasthttp arms WriteTimeout before writing each response: a
		// client that stops reading cannot hold a connection, a goroutine
		// and a buffered answer for ever. A committed stream re-arms the
		// deadline before every event (the target's timeout per event; see
		// upstream.Walk), so this bounds a stream's stalls, not its length.
		WriteTimeout:       ResponseWriteTimeout,
		ReadBufferSize:     ReadBufferSize,
		MaxRequestBodySize: FallbackMaxRequestBytes,
		// Stream request bodies so that memory follows the bytes that
		// arrive, not the Content-Length a client declares (see body.go).
		// Not with reduce_memory_usage: fasthttp then keeps each
		// connection's read buffer between requests, which is what that
		// mode exists to release.
		StreamRequestBody: !reduceMemoryUsage,
		// The API takes JSON bodies only; never parse multipart forms.
		DisablePreParseMultipartForm: true,
		// server.reduce_memory_usage (restart-only, default false): pool
		// each connection's read and write buffers between requests. make
		// bench, 10,000 keep-alive connections idle after a chat
		// completion: 106 MiB RSS on vs 230 MiB off; after /healthz only,
		// 66 vs 173 MiB (a proxied request grows the connection's stack to
		// 8 KiB for good). The price per request: an extra 1-byte read, pool
		// round trips and one allocation; CPU/request 1.23x vs 1.14x the
		// bare proxy's, throughput 0.85x vs 0.92x. Off by default, as in
		// the bare proxy: per-request cost first.
		ReduceMemoryUsage: reduceMemoryUsage,
		// While shutting down, tell keep-alive clients to reconnect (to a
		// server that is not draining).
		CloseOnShutdown: true,
		// Detect clients that vanished during a long stream.
		TCPKeepalive: true,
	}
}

// expectContinue answers an "Expect: 100-continue" request at once, before
// its body is sent, when the handler would refuse it from its head alone:
// a screen refusal (see screenHead), or a declared Content-Length over
// max_request_bytes (413). Else the request goes on, with a fresh write
// deadline for the interim answer. fasthttp then skips the handler and
// closes the connection; the answer written here is what it sends.
func (g *Gateway) expectContinue(rc *fasthttp.RequestCtx) int {
	armWrite(rc)
	st := g.Load()
	r := routeOf(rc.URI().PathOriginal())
	var h head
	if why := g.screenRequest(rc, st, &h); why != refusedNone {
		setRequestID(rc)
		g.refuse(rc, r, why, false)
		return rc.Response.StatusCode()
	}
	// The client key next, so a stranger is never invited to send a body
	// (an upload to the batch APIs included).
	s, ok := r.surface()
	if r == routeBatch {
		s, ok = pathSurface(rc.URI().PathOriginal()), true
	}
	if ok && st != nil && rc.IsPost() {
		if _, ok := authenticateHead(rc, st, s, &h); !ok {
			setRequestID(rc)
			if g.Finished != nil {
				g.finishRefused(rc, s, telemetry.RuleNotRouted, nil, 0, "")
			}
			return rc.Response.StatusCode()
		}
	}
	limit := FallbackMaxRequestBytes
	if st != nil {
		limit = g.bodyLimit(st, &rc.Request.Header)
	}
	if rc.Request.Header.ContentLength() > limit {
		setRequestID(rc)
		writeTooLarge(rc, limit)
		if g.Finished != nil {
			g.finishRefused(rc, r.recordSurface(), telemetry.RuleNotRouted, nil, 0, "")
		}
		return fasthttp.StatusRequestEntityTooLarge
	}
	return fasthttp.StatusContinue
}

// armWrite gives the connection a fresh write deadline, for an answer
// fasthttp writes without arming WriteTimeout itself (an interim 100
// Continue, an error answer to an unreadable request): the deadline the
// connection's previous answer left may have passed.
func armWrite(rc *fasthttp.RequestCtx) {
	if c := rc.Conn(); c != nil {
		c.SetWriteDeadline(time.Now().Add(ResponseWriteTimeout)) //nolint:errcheck // the write reports it
	}
}

// writeReadTimeout answers a request the client sent too slowly (the
// server's ReadTimeout), its headers or its body.
func writeReadTimeout(rc *fasthttp.RequestCtx) {
	writeError(rc, fasthttp.StatusRequestTimeout, "timed out reading the request",
		upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
}

// headerReceived runs as soon as a request's header section is in, before
// fasthttp reads any of its body: it sets the body limit from the current
// State, and refuses an API request with a body over earlyKeyCheckBytes (or
// chunked) that presents no valid client key without reading that body (see
// refuseBodyEarly).
func (g *Gateway) headerReceived(hdr *fasthttp.RequestHeader) fasthttp.RequestConfig {
	st := g.Load()
	if st == nil {
		return fasthttp.RequestConfig{}
	}
	if st.keys != nil && hdr.IsPost() && (hdr.ContentLength() > earlyKeyCheckBytes || hdr.ContentLength() < 0) {
		refuseBodyEarly(hdr, st)
	}
	return fasthttp.RequestConfig{MaxRequestBodySize: g.bodyLimit(st, hdr)}
}

// bodyLimit is the most body bytes the server reads of the request whose
// header section is hdr: st's max_request_bytes, or for an upload to the
// batch APIs (POST /v1/files, POST /v1/messages/batches) its
// max_batch_file_bytes and room for the multipart framing, which the
// batch server reads as a stream and holds to the file limit itself. When
// the server reads bodies whole (server.reduce_memory_usage) an upload is
// held to max_request_bytes too: it would be in memory entire.
func (g *Gateway) bodyLimit(st *State, hdr *fasthttp.RequestHeader) int {
	if st.uploadBytes == 0 || !hdr.IsPost() || g.bufferedBodies.Load() {
		return st.maxRequestBytes
	}
	uri := hdr.RequestURI()
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	if string(uri) == "/v1/files" || string(uri) == "/v1/messages/batches" {
		return st.uploadBytes
	}
	return st.maxRequestBytes
}

// earlyKeyCheckBytes is the largest body whose request headerReceived leaves
// to the handler to refuse: fasthttp pre-reads that much of a streamed body
// before the handler runs whatever the key, so refusing a smaller one
// earlier saves no read, and checking its key in both places would cost a
// second header scan and SHA-256 on every keyed request (docs/design.md,
// Refusing a stranger before the body).
const earlyKeyCheckBytes = 8 << 10

// errorHandler renders an error fasthttp met while reading a request; the
// connection is closed after the answer. Like every answer it carries an
// X-Request-Id (the client's when its headers were read and the id is
// valid, else a generated one) and gets one Finished record, with Rule
// telemetry.RuleNotRouted and the surface of its path when the headers were
// read and name an API path (a body over the limit), else
// telemetry.SurfaceNone (fasthttp resets unreadable headers). Unlike the
// handler's, refusals on the gateway's own endpoints are recorded too: a
// probe never sends an oversized or malformed request. The record's latency
// is 0: fasthttp does not say when such a request began (rc.Time is that of
// the connection's previous request, if any).
func (g *Gateway) errorHandler(rc *fasthttp.RequestCtx, err error) {
	armWrite(rc)
	setRequestID(rc)
	g.writeReadError(rc, err)
	if g.Finished != nil {
		g.finishRefused(rc, routeOf(rc.URI().PathOriginal()).recordSurface(), telemetry.RuleNotRouted, nil, 0, "")
	}
}

// writeReadError writes the OpenAI-shaped answer to a read error: a fixed
// text per class (ClassifyReadError), never fasthttp's own, which quotes
// the offending bytes (a client's key among them).
func (g *Gateway) writeReadError(rc *fasthttp.RequestCtx, err error) {
	switch c := ClassifyReadError(err); c {
	case ReadErrorBodySize:
		limit := FallbackMaxRequestBytes
		if st := g.Load(); st != nil {
			limit = st.maxRequestBytes
		}
		writeTooLarge(rc, limit)
	case ReadErrorHeaderSize:
		writeError(rc, fasthttp.StatusRequestHeaderFieldsTooLarge, c.Message(),
			upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
	case ReadErrorTimeout:
		writeReadTimeout(rc)
	default:
		writeError(rc, fasthttp.StatusBadRequest, c.Message(),
			upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
	}
}
