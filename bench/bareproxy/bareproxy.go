// Package bareproxy is the baseline Switchyard is measured against: a
// fasthttp reverse proxy that forwards every request to one upstream with no
// parsing, routing or failover, configured as a careful operator would
// configure the fastest one (see the settings in New and NewServer, and
// bench/README.md). A figure for Switchyard divided by this one is the price
// of routing.
package bareproxy

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"
)

// BufferSize is the read and write buffer of every connection, client side
// and upstream side: a 16 KiB chat body or answer moves in one system call
// each way, and larger ones are read and written straight from the body
// (bufio bypasses its buffer for a write or read larger than it), where
// fasthttp's 4 KiB default cuts them into pieces and copies each.
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
		// Enough pooled keep-alive connections that the pool never queues a
		// request at the concurrencies the benchmark drives (5,000
		// concurrent long-lived streams).
		MaxConns:            16384,
		MaxIdleConnDuration: 90 * time.Second,
		ReadBufferSize:      BufferSize,
		WriteBufferSize:     BufferSize,
		// Forward the path and header names byte for byte, as a
		// pass-through proxy must, without normalising them first.
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
	// A streaming request gets its response body streamed, so each SSE
	// event leaves as it arrives; any other response is read whole, which
	// costs no allocation (a streamed body costs four).
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

// isStream decides "stream" in constant time, whatever the body's size:
// from an Accept header asking for text/event-stream, or from the first and
// last 256 bytes of the body, where SDKs put the top-level scalars (before
// the messages, as curl examples do, or after them, as the OpenAI SDKs'
// keyword order does). A flag elsewhere is missed, and the answer is then
// relayed whole: correct, only not event by event.
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
