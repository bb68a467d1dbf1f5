// Package bareproxy is the baseline Switchyard is measured against: a
// fasthttp reverse proxy that forwards every request to one upstream with no
// parsing, routing or failover. It is configured for speed the way a careful
// operator would (pooled keep-alive connections, no body copies beyond
// fasthttp's own buffers, no allocations per request, streamed response
// bodies for SSE so events pass through as they arrive); a figure for
// Switchyard divided by this one is the price of routing.
package bareproxy

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"
)

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
		// concurrent long-lived streams; with 4096 the rest failed with
		// ErrNoFreeConns).
		MaxConns:            16384,
		MaxIdleConnDuration: 90 * time.Second,
		// Forward the path byte for byte, as a pass-through proxy must.
		DisablePathNormalizing:   true,
		NoDefaultUserAgentHeader: true,
		ReadTimeout:              5 * time.Minute,
		WriteTimeout:             time.Minute,
		// Never re-send a request on an error: a POST is not idempotent.
		RetryIfErr: func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
	}}
}

// Handler forwards ctx's request and writes the upstream's response, or 502
// when the upstream cannot be reached.
func (p *Proxy) Handler(ctx *fasthttp.RequestCtx) {
	// A streaming request gets its response body streamed, so each SSE event
	// leaves as it arrives; any other response is read whole, which costs no
	// allocation (a streamed body costs four). Deciding needs a byte search
	// of the body, not a parse: the cheapest way to know.
	if isStream(ctx.PostBody()) {
		ctx.Response.StreamBody = true
	}
	if err := p.client.Do(&ctx.Request, &ctx.Response); err != nil {
		ctx.Response.Reset()
		ctx.Error("bad gateway: "+err.Error(), fasthttp.StatusBadGateway)
	}
}

var (
	streamTrue      = []byte(`"stream":true`)
	streamSpaceTrue = []byte(`"stream": true`)
)

func isStream(body []byte) bool {
	return bytes.Contains(body, streamTrue) || bytes.Contains(body, streamSpaceTrue)
}

// NewServer returns the fasthttp server the bareproxy command runs: the
// defaults, with body limits matching Switchyard's.
func NewServer(p *Proxy) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:            p.Handler,
		Name:               "bareproxy",
		MaxRequestBodySize: 10 << 20,
		// Keep idle client connections open like Switchyard does.
		IdleTimeout: 0,
	}
}
