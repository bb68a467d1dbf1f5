package hotpath

import (
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// Header names the handler reads or writes.
const (
	headerRequestID = "X-Request-Id"
	headerMetadata  = "X-Gateway-Metadata"
	headerRule      = "X-Gateway-Rule"

	headerMetadataLower = "x-gateway-metadata"
)

// route is one path of the HTTP surface (docs/api.md, HTTP surface and headers).
type route uint8

const (
	routeUnknown route = iota
	routeChat
	routeCompletions
	routeEmbeddings
	routeImages
	routeResponses
	routeMessages
	routeCountTokens
	routeModels
	routeHealthz
	routeReadyz
	routeMetrics
	// routeBatch is every path of the batch APIs (batchgate.go).
	routeBatch
)

// routeOf maps a request path to its route. The switch on string(path)
// compiles to comparisons that do not allocate.
func routeOf(path []byte) route {
	switch string(path) {
	case "/v1/chat/completions":
		return routeChat
	case "/v1/completions":
		return routeCompletions
	case "/v1/embeddings":
		return routeEmbeddings
	case "/v1/images/generations":
		return routeImages
	case "/v1/responses":
		return routeResponses
	case "/v1/messages":
		return routeMessages
	case "/v1/messages/count_tokens":
		return routeCountTokens
	case "/v1/models":
		return routeModels
	case "/healthz":
		return routeHealthz
	case "/readyz":
		return routeReadyz
	case "/metrics":
		return routeMetrics
	}
	if isBatchPath(path) {
		return routeBatch
	}
	return routeUnknown
}

// surface returns the API surface of a proxied route; ok is false for the
// gateway's own endpoints.
func (r route) surface() (s router.Surface, ok bool) {
	switch r {
	case routeChat:
		return router.SurfaceChat, true
	case routeCompletions:
		return router.SurfaceCompletions, true
	case routeEmbeddings:
		return router.SurfaceEmbeddings, true
	case routeImages:
		return router.SurfaceImages, true
	case routeResponses:
		return router.SurfaceResponses, true
	case routeMessages, routeCountTokens:
		return router.SurfaceMessages, true
	}
	return 0, false
}

// recordSurface is the surface a Finished record names for route r:
// telemetry.SurfaceNone off the API paths.
func (r route) recordSurface() router.Surface {
	if s, ok := r.surface(); ok {
		return s
	}
	return telemetry.SurfaceNone
}

// Handler serves one request: it is the fasthttp.RequestHandler of the
// gateway. Safe for concurrent use. A panic while serving (a bug) is
// recovered and answered 500 internal_error; see Gateway.Panicked.
func (g *Gateway) Handler(rc *fasthttp.RequestCtx) {
	// fasthttp recovers nothing: without this, one bad request would take
	// every connection of the process down. An open-coded defer costs
	// next to nothing on the fast path; the returns are serve's, since a
	// function whose returns times defers pass 15 gets frame-based ones
	// (about 300 instructions a request here).
	defer g.recoverPanic(rc)
	// The request's working memory (its head among it) is pooled rather
	// than on this frame: a committed stream is relayed beneath it, and
	// its bytes would stay on that stack for the stream's life
	// (TestCommittedStreamStack).
	sc := scratchPool.Get().(*scratch)
	defer releaseScratch(sc)
	g.serve(rc, sc)
}

// serve is Handler's body, on the request's pooled scratch.
func (g *Gateway) serve(rc *fasthttp.RequestCtx, sc *scratch) {
	h := &sc.head
	// While draining (from SIGTERM on, server.drain_delay included), each
	// answer asks its keep-alive client to reconnect: the next request goes
	// through the load balancer to a replica that is staying, instead of
	// racing the close of this one's idle connections.
	if g.draining.Load() {
		rc.SetConnectionClose()
	}
	// Finished records (the access log and switchyard_requests_total): every
	// answer gets exactly one, except a GET or HEAD of the gateway's own
	// endpoints (/v1/models, /healthz, /readyz, /metrics). Those are probes,
	// scrapes and model listings that would swamp the log and the request
	// counters; they are neither logged nor counted. A wrong method on them,
	// an unknown path and a wrong method on an API path are recorded with
	// Rule telemetry.RuleNotRouted (surface telemetry.SurfaceNone off the
	// API paths), as are requests fasthttp refuses (see errorHandler).
	//
	// Routes are matched on the path as sent, not as fasthttp decodes and
	// normalizes it: /v1/images%2Fgenerations is not the images surface.
	// The head is screened (framing, Host, Origin: see screenHead) before
	// anything else reads it. Its header section is walked once, here: the
	// screen, the client key, the metadata and the trace context all read
	// what that pass found.
	st := g.Load() // once: the whole request runs on this config
	r := routeOf(rc.URI().PathOriginal())
	h.scan(&rc.Request.Header)
	// Every answer carries an X-Request-Id, probes' included.
	h.setRequestID(rc)
	if why := screenHead(rc, st, h, g.onLoopback(rc)); why != refusedNone {
		g.refuse(rc, r, why, true)
		return
	}
	if r == routeUnknown {
		writeError(rc, fasthttp.StatusNotFound, "unknown path "+strconv.Quote(string(rc.URI().PathOriginal())),
			upstream.TypeInvalidRequest, upstream.CodeNotFound)
		g.finishEarly(rc, telemetry.SurfaceNone, telemetry.RuleNotRouted, nil)
		return
	}
	if r == routeBatch {
		g.batch(rc, st, h)
		return
	}
	if s, ok := r.surface(); ok {
		if !rc.IsPost() {
			if g.wantsSocket(rc, r) {
				g.upgradeSocket(rc, st, h)
				return
			}
			methodNotAllowed(rc, "POST")
			g.finishEarly(rc, s, telemetry.RuleNotRouted, nil)
			return
		}
		g.proxy(rc, st, s, r == routeCountTokens, sc)
		return
	}
	// The gateway's own endpoints answer GET (and HEAD, which fasthttp
	// serves as a GET without a body).
	if !rc.IsGet() && !rc.IsHead() {
		methodNotAllowed(rc, "GET, HEAD")
		g.finishEarly(rc, telemetry.SurfaceNone, telemetry.RuleNotRouted, nil)
		return
	}
	switch r {
	case routeModels:
		if st == nil {
			writeNoConfig(rc)
			return
		}
		body := st.ModelsBody
		if st.keys != nil { // the list the key can route, in OpenAI's shape
			k, ok := authenticateHead(rc, st, router.SurfaceChat, h)
			if !ok {
				return
			}
			body = k.models
		}
		rc.SetContentType(contentTypeJSON)
		rc.SetBody(body)
	case routeHealthz:
		// 200 while the process runs: nothing else is checked.
		rc.SetContentType(contentTypeText)
		rc.SetBodyString("ok\n")
	case routeReadyz:
		rc.SetContentType(contentTypeText)
		switch {
		case g.draining.Load():
			rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
			rc.SetBodyString("draining\n")
		case st == nil:
			rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
			rc.SetBodyString("no configuration loaded\n")
		default:
			rc.SetBodyString("ready\n")
		}
	case routeMetrics:
		if g.Metrics == nil {
			writeError(rc, fasthttp.StatusNotFound, "metrics are not enabled",
				upstream.TypeInvalidRequest, upstream.CodeNotFound)
			return
		}
		g.Metrics(rc)
	}
}

// scratch is the per-request working memory of Handler: the header
// section's record and, for proxy, the body peek, the metadata parser, the
// candidate list and the walk's Call. Pooled so a request allocates none
// of them.
type scratch struct {
	head  head
	peek  peek
	meta  router.MetadataParser
	rule  int
	cands []*upstream.Target
	call  upstream.Call
	// body holds a streamed request body (see readBody); nil until one
	// is read.
	body *bodyBuf
	// key is the client key the request presented (nil without auth);
	// pairs holds its metadata merged with the header's (see bindKey).
	key   *clientKey
	pairs []router.Pair
	// quota is the request's quota state (see quota.go); inactive
	// without a quota plan.
	quota quota.Request
}

var scratchPool = sync.Pool{New: func() any { return &scratch{cands: make([]*upstream.Target, 0, 8)} }}

// proxy serves one API request on surface s with State st (countTokens:
// POST /v1/messages/count_tokens) and scratch sc, its head filled: peek,
// route, walk, write. Handler has set X-Request-Id and screened the
// request.
func (g *Gateway) proxy(rc *fasthttp.RequestCtx, st *State, s router.Surface, countTokens bool, sc *scratch) {
	h := &sc.head
	if st == nil {
		writeNoConfig(rc)
		g.finishEarly(rc, s, telemetry.RuleNotRouted, nil)
		return
	}
	// The key is checked before the body is read: from the header
	// section only, and a stranger's body is never buffered.
	key, ok := authenticateHead(rc, st, s, h)
	if !ok {
		g.finishEarly(rc, s, telemetry.RuleNotRouted, nil)
		return
	}
	if g.auditRefused(rc, s) {
		g.finishKeyed(rc, s, telemetry.RuleNotRouted, nil, keyName(key))
		return
	}
	sc.key = key
	if !routeHead(rc, st, s, countTokens, sc, h) || g.previousRefused(rc, s, key, sc.peek.Previous) ||
		g.storedRefused(rc, st, s, key, sc.call.Body) {
		g.finishKeyed(rc, s, sc.rule, sc.peek.Model, keyName(key))
		return
	}

	// Walk. It writes the answer (proxied response or final error) into rc.
	obs := g.Observer
	var tr *tracker
	// A Responses stream's output items are recorded when it ends
	// (tracker.StreamEnd).
	items := s == router.SurfaceResponses && sc.key != nil && g.Owners != nil
	if g.Finished != nil || g.Panicked != nil || sc.quota.Active() || g.Tracer != nil || items {
		tr = acquireTracker(g, rc, s, sc)
		tr.entry.ConfigHash = st.Config.Hash
		obs = tr
	}
	// rc.Time() is when fasthttp began this request (read once per request
	// by fasthttp itself), so the timeout counts from then at no extra cost.
	deadline := rc.Time().Add(st.requestTimeout)
	res := upstream.Walk(rc, &sc.call, sc.cands, deadline, obs)
	g.reportFenced(sc.key, &res, tr)
	storeDown(rc, s, &sc.quota, &res)
	g.rememberResponse(rc, s, sc.key, &res)
	if tr != nil {
		tr.takeQuota(&sc.quota) // settled when the answer ends
		tr.noteDropped(rc)
		tr.walkReturned(res)
	}
}

// routeHead peeks at the request whose header section is h and routes it:
// it fills sc with the matched rule, the candidates and the Call, sets
// X-Gateway-Rule, and reports true. On a bad request or when no candidate
// serves it, it writes the error (in s's envelope) and reports false. It
// allocates nothing on the success path.
func routeHead(rc *fasthttp.RequestCtx, st *State, s router.Surface, countTokens bool, sc *scratch, h *head) bool {
	sc.rule = telemetry.RuleNotRouted // until Match: refused before routing

	// Peek. The body is held to the limit of st, the State this request
	// routes on (HeaderReceived used the one current when the headers
	// arrived; st may be newer).
	body, err := readBody(rc, st.maxRequestBytes, &sc.body)
	if err != nil {
		writeBodyError(rc, err, st.maxRequestBytes)
		return false
	}
	// A trailer section could carry fields the gateway reads (fasthttp
	// merges them into the request's headers): refused, whatever it holds.
	if len(rc.Request.Header.PeekTrailerKeys()) > 0 {
		writeFraming(rc, "trailer fields are not accepted on requests")
		return false
	}
	p := &sc.peek
	if err = p.parseFor(body, s); err != nil {
		writeSurfaceError(rc, s, fasthttp.StatusBadRequest, err.Error(), upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
		return false
	}
	if !keyAllows(rc, sc.key, s, p.Model) {
		return false
	}
	if !admitKey(rc, st, s, sc, body) {
		return false
	}
	// Only the chat-like surfaces stream; a "stream" field elsewhere is the
	// upstream's business, not a reason to expect SSE. count_tokens never
	// streams, and routes as the non-stream request it is.
	stream := p.Stream && s.ChatLike() && !countTokens
	req := router.Request{
		Surface:  s,
		Model:    p.Model,
		User:     p.User,
		HasUser:  p.HasUser,
		Stream:   stream,
		HasTools: p.HasTools,
	}
	// Metadata routes chat-like surfaces only; elsewhere the header is
	// ignored, not even validated (docs/routing.md, 2). The body is checked first,
	// so a request with both wrong hears about its body.
	// It is read from the header section as received (h), and only once.
	if s.ChatLike() {
		if h.nMeta > 1 {
			writeSurfaceError(rc, s, fasthttp.StatusBadRequest, headerMetadata+" is sent more than once; send it once",
				upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
			return false
		}
		pairs, err := sc.meta.Parse(h.meta)
		if err != nil {
			writeSurfaceError(rc, s, fasthttp.StatusBadRequest, err.Error(), upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
			return false
		}
		req.Metadata = pairs
	}
	bindKey(&req, sc.key, sc) // the key's identity, not the client's claim

	// Route. The chain is the matched rule's, or [targets[0]] alone; the
	// candidates are its members that serve the model and the surface, in
	// chain order. Nothing outside the chain is ever considered.
	rule, chain := st.Router.Match(&req)
	sc.rule = rule
	setRuleHeader(rc, rule)
	cands := sc.cands[:0]
	servesModel := false
	for _, t := range chain {
		if !st.Router.ServesModel(t, p.Model) {
			continue
		}
		servesModel = true
		if st.Router.ServesSurface(t, s) {
			cands = append(cands, st.Targets[t])
		}
	}
	sc.cands = cands
	if len(cands) == 0 {
		if servesModel {
			writeSurfaceError(rc, s, fasthttp.StatusNotFound, "model "+strconv.Quote(string(p.Model))+
				" is not served on "+string(rc.Path())+" by the targets this request routes to",
				upstream.TypeInvalidRequest, upstream.CodeUnsupportedEndpoint)
		} else {
			writeSurfaceError(rc, s, fasthttp.StatusNotFound, "model "+strconv.Quote(string(p.Model))+
				" is not served by the targets this request routes to",
				upstream.TypeInvalidRequest, upstream.CodeModelNotFound)
		}
		return false
	}

	sc.call = upstream.Call{Surface: s, Stream: stream, Body: body, Model: p.Model, CountTokens: countTokens, Fence: sc.key.fenceOf(), RequestID: h.id}
	sc.call.TraceParent, sc.call.TraceState = h.trace()
	if sc.quota.Active() {
		sc.call.Quota = &sc.quota
	}
	if s == router.SurfaceMessages {
		// The pass-through forwards anthropic-version and anthropic-beta.
		sc.call.Header = &rc.Request.Header
	}
	return true
}

func releaseScratch(sc *scratch) {
	sc.head = head{}
	if sc.quota.Active() { // a request that never walked gives back what it held
		sc.quota.Finish("", false, quota.Usage{}, time.Now())
	}
	clear(sc.cands[:cap(sc.cands)]) // drop target pointers of old configs
	sc.cands = sc.cands[:0]
	sc.call = upstream.Call{}
	sc.key = nil
	clear(sc.pairs[:cap(sc.pairs)])
	sc.pairs = sc.pairs[:0]
	sc.peek.release()
	if sc.body != nil && cap(sc.body.b) > maxKeptBody {
		// A large body's buffer is not kept for every request: it goes
		// back to its size class for the next large body.
		putBody(sc.body)
		sc.body = nil
	}
	scratchPool.Put(sc)
}

// setRuleHeader sets X-Gateway-Rule: the matched condition's index, or
// "fallback" when none matched.
func setRuleHeader(rc *fasthttp.RequestCtx, rule int) {
	if rule < 0 {
		rc.Response.Header.SetCanonical(headerRuleBytes, fallbackBytes)
		return
	}
	var buf [20]byte
	rc.Response.Header.SetCanonical(headerRuleBytes, strconv.AppendInt(buf[:0], int64(rule), 10))
}

// headerRuleBytes is headerRule in fasthttp's canonical form, so setting it
// skips normalizing the name; fallbackBytes is its no-match value.
var headerRuleBytes, fallbackBytes = []byte(headerRule), []byte("fallback")

// recoverPanic is Handler's deferred guard. It must be deferred directly
// (recover only works there). It reports the panic to Gateway.Panicked and,
// unless a stream was already committed (its writer owns the answer and
// ends it), replaces whatever was set of the response with a 500
// internal_error, keeping X-Request-Id.
func (g *Gateway) recoverPanic(rc *fasthttp.RequestCtx) {
	v := recover()
	if v == nil {
		return
	}
	if g.Panicked != nil {
		g.Panicked(v, debug.Stack())
	}
	if rc.Response.IsBodyStream() {
		return
	}
	id := append([]byte(nil), rc.Response.Header.Peek(headerRequestID)...)
	rc.Response.Reset()
	if len(id) > 0 {
		rc.Response.Header.SetBytesV(headerRequestID, id)
	}
	writeError(rc, fasthttp.StatusInternalServerError, "internal gateway error",
		upstream.TypeServer, upstream.CodeInternalError)
}

// headPool holds the header-section records Handler fills; see Handler.
var headPool = sync.Pool{New: func() any { return new(head) }}

func putHead(h *head) {
	*h = head{}
	headPool.Put(h)
}
