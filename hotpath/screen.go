package hotpath

import (
	"bytes"
	"net"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// Screening: what the gateway refuses from a request's head alone, before
// it routes or reads a body (docs/api.md, Requests the gateway refuses).
//
//   - Framing (RFC 9112 §6.3): a Transfer-Encoding other than a single
//     final "chunked" (fasthttp takes "identity" as "no body" and would
//     read the body as the next request), Transfer-Encoding together with
//     Content-Length, and obsolete line folding: 400, connection closed.
//   - DNS rebinding: on a connection accepted on a loopback address, a Host
//     that is not a loopback name (localhost, 127.x.x.x, [::1], any port)
//     nor in server.allowed_hosts: 403 host_not_allowed. Every path.
//   - Cross-site requests: an Origin header not in server.allowed_origins
//     (none by default): 403 origin_not_allowed. Every path, any listener.

// refusal is why screen refused a request; refusedNone: it did not.
type refusal uint8

const (
	refusedNone refusal = iota
	refusedTransferEncoding
	refusedTEAndLength
	refusedFolding
	refusedHost
	refusedOrigin
)

// Error codes of the screen's 403s.
const (
	codeHostNotAllowed   = "host_not_allowed"
	codeOriginNotAllowed = "origin_not_allowed"
)

// screenRequest reads rc's header section into h (the one pass every later
// reader uses) and screens the request against st.
func (g *Gateway) screenRequest(rc *fasthttp.RequestCtx, st *State, h *head) refusal {
	h.scan(&rc.Request.Header)
	return screenHead(rc, st, h, g.onLoopback(rc))
}

// screenHead checks the head of a request, h being its header section
// (head.scan), against st (nil: no configuration, so no allowed hosts or
// origins); loopback is whether its connection was accepted on a loopback
// address (Gateway.onLoopback). It allocates nothing.
func screenHead(rc *fasthttp.RequestCtx, st *State, h *head, loopback bool) refusal {
	if h.early != refusedNone {
		return h.early
	}
	if h.nTE > 0 && h.nCL > 0 {
		return refusedTEAndLength
	}
	if loopback {
		// The URI's host is the Host header's unless the request line
		// named another (absolute form): then both are checked.
		host, uriHost := rc.Request.Header.Host(), rc.URI().Host()
		if !hostAllowed(host, st) || !bytes.Equal(uriHost, host) && !hostAllowed(uriHost, st) {
			return refusedHost
		}
	}
	if h.nOrigin > 0 && (h.nOrigin > 1 || !originAllowed(h.origin, st)) {
		return refusedOrigin
	}
	return refusedNone
}

// writeRefusal answers a request screen refused.
func writeRefusal(rc *fasthttp.RequestCtx, why refusal) {
	switch why {
	case refusedTransferEncoding:
		writeFraming(rc, "Transfer-Encoding other than chunked is not accepted; send chunked or Content-Length")
	case refusedTEAndLength:
		writeFraming(rc, "Transfer-Encoding and Content-Length together are not accepted; send one of them")
	case refusedFolding:
		writeFraming(rc, "obsolete header line folding is not accepted")
	case refusedHost:
		writeError(rc, fasthttp.StatusForbidden, "Host "+quoteHead(rc.Request.Header.Host())+
			" is not accepted on a loopback listener; list it in server.allowed_hosts",
			upstream.TypeInvalidRequest, codeHostNotAllowed)
	case refusedOrigin:
		writeError(rc, fasthttp.StatusForbidden, "requests from browser origins are not accepted unless listed in server.allowed_origins",
			upstream.TypeInvalidRequest, codeOriginNotAllowed)
	default:
		panic("BUG: hotpath: writeRefusal without a refusal")
	}
}

// writeFraming answers 400 to a request whose body framing is in doubt and
// closes the connection: where its body ends, and so where the next request
// starts, is not known.
func writeFraming(rc *fasthttp.RequestCtx, msg string) {
	writeError(rc, fasthttp.StatusBadRequest, msg, upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
	rc.SetConnectionClose()
}

// quoteHead quotes a client's header value for an error message, cut short.
func quoteHead(b []byte) string {
	const max = 100
	if len(b) > max {
		b = b[:max]
	}
	return `"` + string(bytes.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' {
			return '?'
		}
		return r
	}, b)) + `"`
}

// loopbackConn reports whether rc's connection was accepted on a loopback
// address (a loopback listener, or a wildcard one reached through
// loopback).
func loopbackConn(rc *fasthttp.RequestCtx) bool {
	a, ok := rc.LocalAddr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// What the listener's address says of the connections it accepts (see
// Gateway.SetListenAddr).
const (
	// listenUnset: no listener address given yet; each connection's local
	// address is looked at.
	listenUnset uint32 = iota
	// listenEach: each connection's local address is looked at (a
	// wildcard address, not TCP, or two listeners that disagree).
	listenEach
	// listenLoopback: bound to a loopback address, so every connection is
	// accepted on one.
	listenLoopback
	// listenElsewhere: bound to one non-loopback address, so none is.
	listenElsewhere
)

// listenKind is what a listener bound to a says of its connections.
func listenKind(a net.Addr) uint32 {
	t, ok := a.(*net.TCPAddr)
	switch {
	case !ok || t.IP == nil || t.IP.IsUnspecified():
		return listenEach
	case t.IP.IsLoopback():
		return listenLoopback
	}
	return listenElsewhere
}

// SetListenAddr tells g the address of the listener it serves, so that
// whether a connection was accepted on a loopback address (the DNS
// rebinding check, see screenHead) is decided once for a listener bound to
// one address instead of for every request: a loopback-bound listener
// accepts only loopback connections, one bound to another address none. A
// wildcard listener (0.0.0.0, [::]) still looks at each connection, as does
// a Gateway never told. Call it before serving; a second call with a
// listener that says otherwise sends every connection back to the
// per-connection check.
func (g *Gateway) SetListenAddr(a net.Addr) {
	k := listenKind(a)
	if !g.listen.CompareAndSwap(listenUnset, k) && g.listen.Load() != k {
		g.listen.Store(listenEach)
	}
}

// onLoopback reports whether rc's connection was accepted on a loopback
// address.
func (g *Gateway) onLoopback(rc *fasthttp.RequestCtx) bool {
	switch g.listen.Load() {
	case listenLoopback:
		return true
	case listenElsewhere:
		return false
	}
	return loopbackConn(rc)
}

// hostAllowed reports whether host (a Host value, port optional) is a
// loopback name or one of st's allowed hosts.
func hostAllowed(host []byte, st *State) bool {
	name, ok := hostName(host)
	if !ok {
		return false
	}
	// The usual names first: ipv4Loopback parses a dotted quad.
	if string(name) == "127.0.0.1" || equalFoldLower(name, "localhost") || string(name) == "[::1]" || ipv4Loopback(name) {
		return true
	}
	if st != nil {
		for _, h := range st.allowedHosts {
			if equalFoldLower(name, h) {
				return true
			}
		}
	}
	return false
}

// hostName returns host without its port; ok is false when host is empty
// or its port is not digits.
func hostName(host []byte) (name []byte, ok bool) {
	end := len(host)
	if len(host) > 0 && host[0] == '[' {
		end = bytes.IndexByte(host, ']') + 1
		if end == 0 {
			return nil, false
		}
	} else if i := bytes.LastIndexByte(host, ':'); i >= 0 {
		end = i
	}
	if rest := host[end:]; len(rest) > 0 {
		if rest[0] != ':' {
			return nil, false
		}
		for _, c := range rest[1:] {
			if c < '0' || c > '9' {
				return nil, false
			}
		}
	}
	return host[:end], end > 0
}

// ipv4Loopback reports whether b is a dotted-quad address in 127.0.0.0/8,
// as a browser writes it.
func ipv4Loopback(b []byte) bool {
	parts, v, digits := 0, 0, 0
	first := -1
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == '.' {
			if digits == 0 || v > 255 {
				return false
			}
			if first < 0 {
				first = v
			}
			parts++
			v, digits = 0, 0
			continue
		}
		c := b[i]
		if c < '0' || c > '9' || digits == 3 {
			return false
		}
		v = v*10 + int(c-'0')
		digits++
	}
	return parts == 4 && first == 127
}

// originAllowed reports whether origin is one of st's allowed origins.
func originAllowed(origin []byte, st *State) bool {
	if st == nil {
		return false
	}
	for _, o := range st.allowedOrigins {
		if equalFoldLower(origin, o) {
			return true
		}
	}
	return false
}

// refuse answers and records a request screen refused on route r.
// latencyKnown is false in the ExpectHandler, before fasthttp has set the
// request's time.
func (g *Gateway) refuse(rc *fasthttp.RequestCtx, r route, why refusal, latencyKnown bool) {
	writeRefusal(rc, why)
	switch {
	case g.Finished == nil:
	case latencyKnown:
		g.finishEarly(rc, r.recordSurface(), telemetry.RuleNotRouted, nil)
	default:
		g.finishRefused(rc, r.recordSurface(), telemetry.RuleNotRouted, nil, 0, "")
	}
}
