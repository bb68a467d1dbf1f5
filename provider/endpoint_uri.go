package provider

import (
	"github.com/valyala/fasthttp"
)

// Request URIs parsed once. fasthttp parses a request's URI whenever it is
// set as bytes (before the request is written, to build the request line
// and Host): for the pass-through adapters that is the same base URL and
// one of a handful of paths on every attempt, about 0.2 µs of a small
// request's budget. An Endpoint keeps each of its fixed URIs parsed, and an
// attempt copies the parsed one (Request.SetURI) instead.

// endpointURIs maps a path an adapter sends to (relative to BaseURL) to its
// parsed URI. Built with the Target and never changed; the URIs are only
// read (URI.CopyTo), so attempts share them.
type endpointURIs map[string]*fasthttp.URI

// uriPather is an Adapter whose requests go to fixed paths under base_url.
type uriPather interface {
	uriPaths() []string
}

// PrepareURIs parses ep's URI for each of ad's fixed paths, if it has any.
// A URI fasthttp cannot parse is left out: attempts then set it as bytes,
// as before, and fail or not as they did.
func (ep *Endpoint) PrepareURIs(ad Adapter) {
	p, ok := ad.(uriPather)
	if !ok {
		return
	}
	m := endpointURIs{}
	for _, path := range p.uriPaths() {
		u := &fasthttp.URI{DisablePathNormalizing: true}
		if u.Parse(nil, []byte(ep.BaseURL+path)) != nil {
			continue
		}
		m[path] = u
	}
	ep.uris = m
}

// setRequestURI sets req's URI to ep.BaseURL+path with path normalizing off:
// a copy of the prepared URI when there is one, else the joined bytes.
func (ep *Endpoint) setRequestURI(req *fasthttp.Request, path string) {
	if u := ep.uris[path]; u != nil {
		req.SetURI(u)
		return
	}
	req.URI().DisablePathNormalizing = true
	// A stack buffer the request copies: a concatenation over 32 bytes
	// (any real base URL with its path) would allocate on every attempt.
	var buf [256]byte
	req.SetRequestURIBytes(append(append(buf[:0], ep.BaseURL...), path...))
}

// Prepared reports whether PrepareURIs parsed ep's request URIs.
func (ep *Endpoint) Prepared() bool { return len(ep.uris) > 0 }

// Unprepared returns a copy of ep as built by hand: without prepared URIs,
// so each attempt parses its URI (the reference a prepared one must match).
func (ep *Endpoint) Unprepared() Endpoint {
	c := *ep
	c.uris = nil
	return c
}
