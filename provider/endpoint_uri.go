package provider

import (
	"github.com/valyala/fasthttp"
)

// Request URIs parsed once. fasthttp parses a request's URI whenever it is
// set as bytes (before the request is written, to build the request line
// and Host): for the pass-through adapters that is the same base URL and
// one of a handful of paths on every attempt, about 0.2 µs of a small
// request's budget. An Endpoint keeps each of its fixed URIs parsed, and an
// attempt copies the parsed one (Request.SetURI) instead. Its bearer
// credential is assembled once too.

// endpointURI is a path an adapter sends to (relative to BaseURL) and its
// parsed URI.
type endpointURI struct {
	path string
	uri  *fasthttp.URI
}

// endpointURIs holds an adapter's parsed URIs. Built with the Target and
// never changed; the URIs are only read (URI.CopyTo), so attempts share
// them. A handful of paths: a scan compares fewer bytes than a map hashes.
type endpointURIs []endpointURI

// uriPather is an Adapter whose requests go to fixed paths under base_url.
type uriPather interface {
	uriPaths() []string
}

// Prepare readies ep for ad's attempts: it parses ep's URI for each of
// ad's fixed paths, if it has any, and assembles the bearer credential of
// its API key. A URI fasthttp cannot parse is left out: attempts then set
// it as bytes, as before, and fail or not as they did.
func (ep *Endpoint) Prepare(ad Adapter) {
	if ep.APIKey != "" {
		ep.bearer = append([]byte("Bearer "), ep.APIKey...)
	}
	p, ok := ad.(uriPather)
	if !ok {
		return
	}
	var m endpointURIs
	for _, path := range p.uriPaths() {
		u := &fasthttp.URI{DisablePathNormalizing: true}
		if u.Parse(nil, []byte(ep.BaseURL+path)) != nil {
			continue
		}
		m = append(m, endpointURI{path, u})
	}
	ep.uris = m
}

// setRequestURI sets req's URI to ep.BaseURL+path with path normalizing off:
// a copy of the prepared URI when there is one, else the joined bytes.
func (ep *Endpoint) setRequestURI(req *fasthttp.Request, path string) {
	for i := range ep.uris {
		if ep.uris[i].path == path {
			req.SetURI(ep.uris[i].uri)
			return
		}
	}
	req.URI().DisablePathNormalizing = true
	// A stack buffer the request copies: a concatenation over 32 bytes
	// (any real base URL with its path) would allocate on every attempt.
	var buf [256]byte
	req.SetRequestURIBytes(append(append(buf[:0], ep.BaseURL...), path...))
}

// headerAuthorization is Authorization in fasthttp's canonical form, so
// SetCanonical stores it without normalizing the name per attempt.
var headerAuthorization = []byte(fasthttp.HeaderAuthorization)

// setAPIKeyBearer sets Authorization to ep's API key as a bearer token, if
// it has one: the prepared value, else assembled.
func (ep *Endpoint) setAPIKeyBearer(req *fasthttp.Request) {
	if ep.bearer != nil {
		req.Header.SetCanonical(headerAuthorization, ep.bearer)
		return
	}
	if ep.APIKey != "" {
		// Assembled in a stack buffer that the request copies: a string
		// concatenation over 32 bytes (any real key) would allocate.
		var buf [256]byte
		req.Header.SetCanonical(headerAuthorization, append(append(buf[:0], "Bearer "...), ep.APIKey...))
	}
}

// Prepared reports whether Prepare parsed ep's request URIs.
func (ep *Endpoint) Prepared() bool { return len(ep.uris) > 0 }

// Unprepared returns a copy of ep as built by hand: without prepared URIs
// or credential, so each attempt builds them (the reference a prepared one
// must match).
func (ep *Endpoint) Unprepared() Endpoint {
	c := *ep
	c.uris = nil
	c.bearer = nil
	return c
}
