// Package bareproxy is the baseline Switchyard is measured against: a
// fasthttp proxy to one upstream with no parsing, routing or failover,
// configured as a careful operator would configure the fastest one, so that
// a ratio to it is the price of routing.
package bareproxy

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"
)

// BufferSize is every connection's read and write buffer: a 16 KiB body
// moves in one system call, and bufio passes larger ones straight through,
// where fasthttp's 4 KiB default cuts them into pieces and copies each.
const BufferSize = 16 << 10

// Proxy forwards requests to one upstream. Its Handler is safe for
// concurrent use.
type Proxy struct {
	client *fasthttp.HostClient
}

// New returns a Proxy forwarding to upstreamAddr ("host:port", plain HTTP).
func New(upstreamAddr string) *Proxy {
	return &Proxy{client: &fasthttp.HostClient{
		Addr: upstreamAddr,
		// Never queue a request, even with 5,000 streams open.
		MaxConns:            16384,
		MaxIdleConnDuration: 90 * time.Second,
		ReadBufferSize:      BufferSize,
		WriteBufferSize:     BufferSize,
		// Forward path and header names byte for byte.
		DisablePathNormalizing:        true,
		DisableHeaderNamesNormalizing: true,
		NoDefaultUserAgentHeader:      true,
		ReadTimeout:                   5 * time.Minute,
		WriteTimeout:                  time.Minute,
		// Never re-send a request on an error: a POST is not idempotent.
		RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		MaxIdemponentCallAttempts: 1,
	}}
}

// Handler forwards ctx's request and writes the upstream's response, or 502
// when the upstream cannot be reached.
func (p *Proxy) Handler(ctx *fasthttp.RequestCtx) {
	// Only a streaming request's answer is streamed, event by event: a
	// whole answer costs no allocation, a streamed one four.
	if isStream(&ctx.Request) {
		ctx.Response.StreamBody = true
	}
	if err := p.client.Do(&ctx.Request, &ctx.Response); err != nil {
		ctx.Response.Reset()
		ctx.Error("bad gateway: "+err.Error(), fasthttp.StatusBadGateway)
	}
}

// edge is how much of each end of a body isStream looks at.
const edge = 256

var (
	streamTrue      = []byte(`"stream":true`)
	streamSpaceTrue = []byte(`"stream": true`)
	eventStream     = []byte("text/event-stream")
)

// isStream decides "stream" in constant time: from an Accept header asking
// for text/event-stream, or from the first and last 256 bytes of the body,
// where SDKs put the top-level scalars. A flag elsewhere is missed, and the
// answer is relayed whole: correct, only not event by event.
func isStream(req *fasthttp.Request) bool {
	if bytes.Contains(req.Header.Peek("Accept"), eventStream) {
		return true
	}
	b := req.Body()
	if len(b) > 2*edge {
		return contains(b[:edge]) || contains(b[len(b)-edge:])
	}
	return contains(b)
}

func contains(b []byte) bool {
	return bytes.Contains(b, streamTrue) || bytes.Contains(b, streamSpaceTrue)
}

// NewServer returns the fasthttp server the bareproxy command runs, with
// Switchyard's body limit and buffers of BufferSize.
func NewServer(p *Proxy) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:                       p.Handler,
		Name:                          "bareproxy",
		MaxRequestBodySize:            10 << 20,
		ReadBufferSize:                BufferSize,
		WriteBufferSize:               BufferSize,
		DisablePreParseMultipartForm:  true,
		DisableHeaderNamesNormalizing: true,
		// Keep idle client connections open like Switchyard does.
		IdleTimeout: 0,
	}
}
