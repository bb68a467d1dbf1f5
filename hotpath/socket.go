package hotpath

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// Responses over WebSocket (docs/api.md, Responses over WebSocket): a GET
// /v1/responses that asks for a WebSocket is screened like any request,
// its client key and X-Gateway-Metadata header are checked from the
// header section, and only then is it handed to Gateway.ResponsesSocket,
// which upgrades it. Each response.create on the socket comes back to
// Handler as an ordinary POST /v1/responses, so routing, quotas, the audit
// log and failover stay here, in one place.

// SocketUpgrade takes over a checked WebSocket request: it answers 101 and
// serves the socket (true), or writes a refusal (false: a bad handshake).
// key is the name of the client key the request presented ("" without
// auth).
type SocketUpgrade func(rc *fasthttp.RequestCtx, key string) bool

// wantsSocket reports whether rc is a GET that asks for a WebSocket
// (Upgrade: websocket) and a socket server is set.
func (g *Gateway) wantsSocket(rc *fasthttp.RequestCtx, r route) bool {
	return r == routeResponses && g.ResponsesSocket != nil && rc.IsGet() &&
		tokenListHas(rc.Request.Header.Peek(fasthttp.HeaderUpgrade), "websocket")
}

// upgradeSocket checks a WebSocket request to /v1/responses whose header
// section is h and hands it to ResponsesSocket. A refusal (401, 400 for a
// bad metadata header, 503 while draining) is answered in OpenAI's
// envelope before any upgrade and gets its Finished record; an upgrade
// gets none (each response on the socket gets its own).
func (g *Gateway) upgradeSocket(rc *fasthttp.RequestCtx, st *State, h *head) {
	const s = router.SurfaceResponses
	if st == nil {
		writeNoConfig(rc)
		g.finishEarly(rc, s, telemetry.RuleNotRouted, nil)
		return
	}
	key, ok := authenticateHead(rc, st, s, h)
	if !ok {
		g.finishEarly(rc, s, telemetry.RuleNotRouted, nil)
		return
	}
	// The handshake is a bare HTTP/1.1 GET (RFC 6455, 4.1). Bytes of a
	// request body still unread at the upgrade would be read as the
	// socket's first frames, which a proxy in front forwarded as a body:
	// refused, as is an upgrade on a connection that closes after this
	// answer (HTTP/1.0, Connection: close), which could never be served.
	if why := upgradeFraming(&rc.Request.Header); why != "" {
		writeError(rc, fasthttp.StatusBadRequest, why, upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
		g.finishKeyed(rc, s, telemetry.RuleNotRouted, nil, keyName(key))
		return
	}
	// A socket outlives its request: one opened while draining would be
	// closed moments later. The client reconnects elsewhere.
	if g.draining.Load() {
		writeError(rc, fasthttp.StatusServiceUnavailable, "the gateway is shutting down; reconnect",
			upstream.TypeUpstream, upstream.CodeUpstreamUnavailable)
		g.finishKeyed(rc, s, telemetry.RuleNotRouted, nil, keyName(key))
		return
	}
	// Every response on the socket routes with this header: a bad one is
	// refused now rather than on each response.
	if h.nMeta > 0 {
		var mp router.MetadataParser
		_, err := mp.Parse(h.meta)
		if h.nMeta > 1 || err != nil {
			msg := headerMetadata + " is sent more than once; send it once"
			if err != nil {
				msg = err.Error()
			}
			writeError(rc, fasthttp.StatusBadRequest, msg, upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
			g.finishKeyed(rc, s, telemetry.RuleNotRouted, nil, keyName(key))
			return
		}
	}
	if !g.ResponsesSocket(rc, keyName(key)) {
		g.finishKeyed(rc, s, telemetry.RuleNotRouted, nil, keyName(key))
	}
}

// upgradeFraming says why the header section h cannot open a socket: a
// body (a Content-Length over 0, or chunked; fasthttp says -2 for none), a
// protocol older than HTTP/1.1, or Connection: close; "" when it can.
func upgradeFraming(h *fasthttp.RequestHeader) string {
	switch cl := h.ContentLength(); {
	case cl > 0 || cl == -1:
		return "a WebSocket upgrade request must not carry a body"
	case !h.IsHTTP11() || h.ConnectionClose():
		return "a WebSocket upgrade needs HTTP/1.1 on a connection that stays open"
	}
	return ""
}

// tokenListHas reports whether the comma-separated header value v lists
// token, compared case-insensitively (RFC 9110 §7.8: Upgrade: websocket).
func tokenListHas(v []byte, token string) bool {
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, []byte{','})
		if bytes.EqualFold(bytes.TrimSpace(t), []byte(token)) {
			return true
		}
	}
	return false
}
