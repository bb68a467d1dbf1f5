// Package batch serves the batch APIs through the gateway (docs/batches.md):
// OpenAI's Files and Batches (on openai and azure v1 targets) and
// Anthropic's Message Batches (on anthropic targets). An upload is spooled
// to disk while each of its requests is routed exactly as that request
// would be for its client key, and is stored on one member of the one
// chain every request routes to; every file and batch id handed out is
// recorded with its owner key and target (package tenancy), and a request
// naming an id goes to that id's target for its owner only. Quotas,
// residency, the audit log and the console see every call.
//
// The hot path hands each request on the batch paths to Server.ServeBatch
// once its client key is checked; nothing here is on the path of an
// ordinary request.
package batch

import (
	"bytes"
	"context"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// The APIs, as records and metrics name them.
const (
	apiFiles    = "files"
	apiBatches  = "batches"
	apiMessages = "message_batches"
)

// Server serves the batch API paths; it implements hotpath.BatchServer.
// Safe for concurrent use. Set its fields before serving.
type Server struct {
	// Gateway is the gateway it serves for: its Finished, Observer and
	// Fenced hooks hear of every batch call.
	Gateway *hotpath.Gateway
	// Store records the owners of files and batches.
	Store tenancy.ObjectStore
	// StoreFailed, when set, hears of a store failure (the answer is 503).
	StoreFailed func(error)
	// Owned, when set, hears how many objects of each kind a key owns,
	// counted after each call that may change it (for the metrics).
	Owned func(key string, n [tenancy.NumKinds]int)
	// Log receives the few lines batch calls log (never a body, a key or
	// a credential).
	Log zerolog.Logger

	spools Spools
	meter  meter
	// now is the clock; nil = time.Now (tests move it).
	now func() time.Time
	// storeWait bounds one call of the ownership store; 0 =
	// storeTimeout (tests shorten it).
	storeWait time.Duration
}

// storeTimeout bounds one call of the ownership store.
const storeTimeout = 2 * time.Second

// storeCtx is a context for one ownership store call, made just before it:
// its bound is the store's, not what the call waited for before.
func (s *Server) storeCtx() (context.Context, context.CancelFunc) {
	d := s.storeWait
	if d <= 0 {
		d = storeTimeout
	}
	return context.WithTimeout(context.Background(), d)
}

func (s *Server) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// SpoolUsed returns the bytes uploads in flight hold on disk.
func (s *Server) SpoolUsed() int64 { return s.spools.Used() }

// call is one request on a batch path: what it is, and what its record
// will say.
type call struct {
	s      *Server
	rc     *fasthttp.RequestCtx
	st     *hotpath.State
	caller hotpath.Caller
	// envelope is the error envelope's surface: chat (OpenAI's) or
	// messages (Anthropic's).
	envelope router.Surface
	start    time.Time

	api, op string
	id      []byte
	model   []byte
	rule    int
	// walked and steps are the targets reached, for the record.
	walked   []string
	steps    []telemetry.Step
	target   *upstream.Target
	attempts int
	class    upstream.Class
	recorded bool
}

// ServeBatch implements hotpath.BatchServer.
func (s *Server) ServeBatch(rc *fasthttp.RequestCtx, st *hotpath.State, c hotpath.Caller) {
	cl := &call{s: s, rc: rc, st: st, caller: c, start: rc.Time(), rule: telemetry.RuleNotRouted}
	defer cl.finish()
	path := rc.URI().PathOriginal()
	var rest []byte
	switch {
	case bytes.HasPrefix(path, []byte("/v1/messages/batches")):
		cl.api, cl.envelope, rest = apiMessages, router.SurfaceMessages, path[len("/v1/messages/batches"):]
	case bytes.HasPrefix(path, []byte("/v1/files")):
		cl.api, cl.envelope, rest = apiFiles, router.SurfaceChat, path[len("/v1/files"):]
	default:
		cl.api, cl.envelope, rest = apiBatches, router.SurfaceChat, path[len("/v1/batches"):]
	}
	id, sub, ok := splitPath(rest)
	if !ok {
		cl.notFound("unknown path " + strconv.Quote(string(path)))
		return
	}
	cl.id = id
	m := string(rc.Method())
	switch cl.api {
	case apiFiles:
		switch {
		case id == nil && m == fasthttp.MethodPost:
			cl.upload()
		case id == nil && m == fasthttp.MethodGet:
			cl.list(kindFiles)
		case id != nil && sub == "" && m == fasthttp.MethodGet:
			cl.read(kindFiles)
		case id != nil && sub == "" && m == fasthttp.MethodDelete:
			cl.remove(kindFiles)
		case id != nil && sub == "content" && m == fasthttp.MethodGet:
			cl.download(kindFiles)
		default:
			cl.wrongMethod(id, sub, map[string]string{"": "GET, POST", "id": "GET, DELETE", "content": "GET"})
		}
	case apiBatches:
		switch {
		case id == nil && m == fasthttp.MethodPost:
			cl.createBatch()
		case id == nil && m == fasthttp.MethodGet:
			cl.list(kindBatches)
		case id != nil && sub == "" && m == fasthttp.MethodGet:
			cl.read(kindBatches)
		case id != nil && sub == "cancel" && m == fasthttp.MethodPost:
			cl.cancel(kindBatches)
		default:
			cl.wrongMethod(id, sub, map[string]string{"": "GET, POST", "id": "GET", "cancel": "POST"})
		}
	default:
		switch {
		case id == nil && m == fasthttp.MethodPost:
			cl.createMessageBatch()
		case id == nil && m == fasthttp.MethodGet:
			cl.list(kindMessages)
		case id != nil && sub == "" && m == fasthttp.MethodGet:
			cl.read(kindMessages)
		case id != nil && sub == "" && m == fasthttp.MethodDelete:
			cl.remove(kindMessages)
		case id != nil && sub == "results" && m == fasthttp.MethodGet:
			cl.download(kindMessages)
		case id != nil && sub == "cancel" && m == fasthttp.MethodPost:
			cl.cancel(kindMessages)
		default:
			cl.wrongMethod(id, sub, map[string]string{"": "GET, POST", "id": "GET, DELETE", "results": "GET", "cancel": "POST"})
		}
	}
}

// splitPath splits the path after an API's prefix: "" (the collection),
// "/{id}" or "/{id}/{sub}". ok is false for anything else, an id that is
// not a plain token (validID) included: such a path names nothing.
func splitPath(rest []byte) (id []byte, sub string, ok bool) {
	if len(rest) == 0 {
		return nil, "", true
	}
	if rest[0] != '/' {
		return nil, "", false
	}
	rest = rest[1:]
	if i := bytes.IndexByte(rest, '/'); i >= 0 {
		id, sub = rest[:i], string(rest[i+1:])
		switch sub {
		case "content", "cancel", "results":
		default:
			return nil, "", false
		}
	} else {
		id = rest
	}
	return id, sub, validID(id)
}

// validID reports whether id is a plain token: 1 to 128 bytes of ASCII
// letters, digits, '-', '_' and '.', not starting with '.'. Providers'
// ids are ("file-abc", "batch_abc", "msgbatch_01…"); anything else is
// never looked up, recorded or put in an upstream path.
func validID(id []byte) bool {
	if len(id) == 0 || len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, c := range id {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// wrongMethod answers a method the path does not take: 405 with Allow, or
// 404 when the sub-path is not one of the API's.
func (c *call) wrongMethod(id []byte, sub string, allow map[string]string) {
	k := sub
	if id != nil && sub == "" {
		k = "id"
	}
	a, ok := allow[k]
	if !ok {
		c.notFound("unknown path " + strconv.Quote(string(c.rc.URI().PathOriginal())))
		return
	}
	c.op = "none"
	c.rc.Response.Header.Set(fasthttp.HeaderAllow, a)
	c.fail(fasthttp.StatusMethodNotAllowed, "method "+string(c.rc.Method())+" is not allowed on "+
		string(c.rc.URI().PathOriginal())+"; use "+a, upstream.TypeInvalidRequest, upstream.CodeMethodNotAllowed)
}

// fail answers a gateway-made error in the API's envelope.
func (c *call) fail(status int, msg, typ, code string) {
	c.rc.Response.ResetBody()
	c.rc.SetStatusCode(status)
	c.rc.SetContentType("application/json")
	c.rc.SetBody(upstream.AppendSurfaceError(make([]byte, 0, 128+len(msg)), c.envelope, status, msg, typ, code))
	c.class = upstream.ClassClient
}

// refuse answers a Refusal.
func (c *call) refuse(r *hotpath.Refusal) { c.fail(r.Status, r.Message, r.Type, r.Code) }

// notFound answers 404: the same answer for an id never handed out and an
// id of another key, so a key learns nothing of another's.
func (c *call) notFound(msg string) {
	c.fail(fasthttp.StatusNotFound, msg, upstream.TypeInvalidRequest, upstream.CodeNotFound)
}

// badRequest answers 400 invalid_request.
func (c *call) badRequest(msg string) {
	c.fail(fasthttp.StatusBadRequest, msg, upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
}

// storeDown answers 503 when the ownership store failed.
func (c *call) storeDown(err error) {
	if f := c.s.StoreFailed; f != nil {
		f(err)
	}
	c.rc.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
	c.fail(fasthttp.StatusServiceUnavailable, "the store of batch owners is unavailable; retry shortly",
		upstream.TypeUpstream, codeStoreUnavailable)
}

// codeStoreUnavailable: the ownership records live in the quota store.
const codeStoreUnavailable = "quota_store_unavailable"

// storeCtx is a context for one ownership store call (also after the
// handler returned: a download settles when it ends).
func (c *call) storeCtx() (context.Context, context.CancelFunc) { return c.s.storeCtx() }

// reached notes that the walk reached t.
func (c *call) reached(t *upstream.Target, class upstream.Class, refused bool) {
	if n := len(c.walked); n == 0 || c.walked[n-1] != t.Name {
		c.walked = append(c.walked, t.Name)
	}
	c.steps = append(c.steps, telemetry.Step{Target: t, Class: class, Refused: refused})
	c.target = t
}

// targetHeaders sets the X-Gateway-* headers of an answer that reached t.
func (c *call) targetHeaders() {
	if c.target == nil {
		return
	}
	h := &c.rc.Response.Header
	h.Set(upstream.HeaderTarget, c.target.Name)
	h.Set(upstream.HeaderProvider, c.target.Provider)
	h.Set(upstream.HeaderAttempts, strconv.Itoa(c.attempts))
	if c.rule != telemetry.RuleNotRouted {
		if c.rule < 0 {
			h.Set("X-Gateway-Rule", "fallback")
		} else {
			h.Set("X-Gateway-Rule", strconv.Itoa(c.rule))
		}
	}
}

// finish reports the call to the Gateway's Finished hook (the access log,
// the metrics, the console and the audit log), once.
func (c *call) finish() {
	if c.recorded {
		return
	}
	c.recorded = true
	c.targetHeaders()
	g := c.s.Gateway
	if g == nil || g.Finished == nil {
		return
	}
	if c.op == "" {
		c.op = "none"
	}
	e := telemetry.Entry{
		RequestID:  c.rc.Response.Header.Peek("X-Request-Id"),
		Surface:    telemetry.SurfaceNone,
		Model:      c.model,
		Rule:       c.rule,
		Walked:     c.walked,
		Attempts:   c.attempts,
		Status:     c.rc.Response.StatusCode(),
		Latency:    time.Since(c.start),
		Class:      c.class,
		Key:        c.caller.Key(),
		TraceID:    upstream.TraceID(&c.rc.Request.Header),
		Steps:      c.steps,
		ConfigHash: c.st.Config.Hash,
		Batch:      telemetry.BatchCall{API: c.api, Op: c.op, ID: c.id},
	}
	if c.target != nil {
		e.Target = c.target.Name
	}
	g.Finished(&e)
	c.recount()
}

// recount tells Owned how many objects the caller owns, in the
// background, after a call that may have changed it.
func (c *call) recount() {
	if c.s.Owned == nil || c.class != upstream.ClassOK {
		return
	}
	switch c.op {
	case "upload", "create", "delete", "read", "list":
	default:
		return
	}
	srv, key, store, owned := c.s, c.caller.Key(), c.s.Store, c.s.Owned
	go func() {
		ctx, cancel := srv.storeCtx()
		defer cancel()
		if n, err := store.Count(ctx, key); err == nil {
			owned(key, n)
		}
	}()
}

// targetNamed returns the State's target named name, or nil.
func (c *call) targetNamed(name string) *upstream.Target {
	for _, t := range c.st.Targets {
		if t.Name == name {
			return t
		}
	}
	return nil
}
