package hotpath

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/tracing"
	"github.com/switchyard/switchyard/upstream"
)

// State is everything a request needs from one loaded configuration. It is
// immutable once Build returns it and safe for concurrent use; a reload
// builds a new State and swaps it in whole.
type State struct {
	// Config is the loaded configuration this State was built from.
	Config *config.Config
	// Router is the compiled routing table.
	Router *router.Snapshot
	// Targets are the runtime targets, indexed like Config.Targets (and
	// like the target indexes in Router's chains).
	Targets []*upstream.Target
	// ModelsBody is the prebuilt GET /v1/models answer.
	ModelsBody []byte

	// maxRequestBytes is Config.Server.MaxRequestBytes and requestTimeout
	// is Config.Server.RequestTimeout, each replaced by the documented default
	// when zero (a Config built by hand rather than loaded).
	maxRequestBytes int
	requestTimeout  time.Duration
	// uploadBytes is the body limit of a batch upload: the configuration's
	// max_batch_file_bytes and room for its multipart framing (see
	// Gateway.bodyLimit).
	uploadBytes int
	// allowedHosts and allowedOrigins are Config.Server.AllowedHosts and
	// AllowedOrigins, lowercased; see screenHead.
	allowedHosts, allowedOrigins []string
	// keys are the client keys by digest; nil without an auth block.
	keys keyring
	// Quota is the configuration's compiled limits and prices; nil = no
	// quotas. Set before the State is published (Gateway.Store).
	Quota *quota.Plan
}

// Build compiles cfg into a State. Runtime targets come from pool, so
// targets whose identity is unchanged keep their circuit, park and
// concurrency state across reloads. now is the "created" time reported in
// /v1/models. Build does no I/O; on error nothing is published.
func Build(cfg *config.Config, pool *upstream.Pool, now time.Time) (*State, error) {
	if cfg == nil || len(cfg.Targets) == 0 {
		return nil, fmt.Errorf("hotpath: a configuration needs at least one target")
	}
	rules, targets := cfg.RouterSpecs()
	snap, err := router.Compile(rules, targets, now.Unix())
	if err != nil {
		return nil, fmt.Errorf("hotpath: compile routing rules: %w", err)
	}
	st := &State{
		Config:          cfg,
		Router:          snap,
		Targets:         make([]*upstream.Target, len(cfg.Targets)),
		maxRequestBytes: cfg.Server.MaxRequestBytes,
		allowedHosts:    lowerAll(cfg.Server.AllowedHosts),
		allowedOrigins:  lowerAll(cfg.Server.AllowedOrigins),
	}
	if st.maxRequestBytes <= 0 {
		st.maxRequestBytes = config.DefaultMaxRequestBytes
	}
	st.uploadBytes = int(cfg.Server.FileLimit()) + UploadFramingBytes
	if st.requestTimeout = cfg.Server.RequestTimeout; st.requestTimeout <= 0 {
		st.requestTimeout = config.DefaultRequestTimeout
	}
	for i := range cfg.Targets {
		t, err := pool.Target(&cfg.Targets[i])
		if err != nil {
			return nil, fmt.Errorf("hotpath: targets[%d]: %w", i, err)
		}
		t.Index, t.Residency = i, cfg.Targets[i].Residency
		st.Targets[i] = t
	}
	st.ModelsBody = appendModels(nil, snap.Models(), snap.Created())
	st.keys = buildKeys(cfg, snap)
	return st, nil
}

// UploadFramingBytes is the room an upload's body has beyond
// max_batch_file_bytes: the multipart boundaries, part headers and form
// fields around the file.
const UploadFramingBytes = 1 << 20

// MaxRequestBytes is the configuration's max_request_bytes (its default
// when not set): the largest request a line of a stored batch describes.
func (st *State) MaxRequestBytes() int { return st.maxRequestBytes }

// RequestTimeout is the configuration's request_timeout (its default when
// not set).
func (st *State) RequestTimeout() time.Duration { return st.requestTimeout }

// lowerAll returns ss lowercased (a loaded Config's lists already are; one
// built by hand may not be).
func lowerAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

// appendModels appends the /v1/models body (docs/api.md, Choices) to dst; data is never
// null.
func appendModels(dst []byte, models []router.ModelInfo, created int64) []byte {
	dst = append(dst, `{"object":"list","data":[`...)
	for i, m := range models {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = upstream.AppendJSONString(dst, m.ID)
		dst = append(dst, `,"object":"model","created":`...)
		dst = strconv.AppendInt(dst, created, 10)
		dst = append(dst, `,"owned_by":`...)
		dst = upstream.AppendJSONString(dst, m.OwnedBy)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// Gateway serves requests from the current State. The zero value is not
// usable; call New. Safe for concurrent use: Store, Load and SetDraining may
// be called while Handler runs.
type Gateway struct {
	// state is the one pointer through which configuration is published;
	// a request loads it once.
	state    atomic.Pointer[State]
	draining atomic.Bool
	// listen is what the served listener's address says of its
	// connections (listenUnset, ...; see SetListenAddr).
	listen atomic.Uint32

	// Observer receives walk events (attempts, outcomes) for metrics and
	// the access log; nil = none. Set before serving; not changed after.
	Observer upstream.Observer
	// Metrics serves GET /metrics; nil answers 404. Set before serving;
	// not changed after.
	Metrics func(rc *fasthttp.RequestCtx)
	// Finished, when set, receives one record per answered request once its
	// answer is complete (access log, request counters), except a GET or
	// HEAD of the gateway's own endpoints and a panic's 500. It may be
	// called from the handler, the ErrorHandler or a stream's writer; e is
	// valid only during the call. A request refused before routing has Rule
	// telemetry.RuleNotRouted. nil = none. Set before serving. See
	// docs/design.md.
	Finished func(e *telemetry.Entry)
	// Panicked, when set, hears of every panic recovered while serving (a
	// bug): v is the panic value, stack the goroutine's stack. A panic in
	// the handler is answered 500 internal_error (type server_error) and
	// gets no Finished record; one in a committed stream's writer (on
	// fasthttp's goroutine) ends the stream with an internal_error frame and
	// its record comes as usual (none when the panic was in an Observer's
	// StreamEnd, which the record follows). It may be called concurrently, from the
	// handler or a stream writer goroutine, and must not panic. nil = the
	// panic is answered but not reported. Set before serving.
	Panicked func(v any, stack []byte)
	// Fenced, when set, hears of each walk the residency guard stopped
	// (key and target names): by construction never, as the load-time
	// proof refuses such configs. Set before serving.
	Fenced func(key, target string)
	// AuditBehind, when set, reports that the audit log cannot keep up:
	// API requests are then refused 503 audit_unavailable after their key
	// is checked. Set before serving.
	AuditBehind func() bool
	// Owners remembers which client key created each Responses API answer;
	// used only with client keys. nil = no ownership checks. OwnerFailed
	// hears of a failed Remember (nil = ignored). Set before serving.
	Owners      tenancy.OwnerStore
	OwnerFailed func(error)
	// Objects records the owners of stored files and batches (the batch
	// APIs' store); with client keys, a request whose body names a file id
	// another key owns is refused (docs/residency.md). nil = no such
	// check. Set before serving.
	Objects tenancy.ObjectStore
	// Tracer, when set, traces each routed request (package tracing);
	// nil = off, at no cost. Set before serving.
	Tracer *tracing.Tracer
	// Batches serves the batch API paths (docs/batches.md); nil = they
	// are unknown paths. Set before serving.
	Batches BatchServer
	// bufferedBodies is set by NewServer when its server reads bodies
	// whole (server.reduce_memory_usage): uploads are then held to
	// max_request_bytes (see bodyLimit).
	bufferedBodies atomic.Bool
	// ResponsesSocket, when set, serves GET /v1/responses requests that
	// ask for a WebSocket, once their client key is checked (socket.go);
	// nil = they get 405 like any GET there. Set before serving.
	ResponsesSocket SocketUpgrade
}

// New returns a Gateway serving st (nil: no State yet; API requests get
// 503 and /readyz fails until Store).
func New(st *State) *Gateway {
	g := &Gateway{}
	if st != nil {
		g.state.Store(st)
	}
	return g
}

// Store publishes st; requests that already loaded the previous State
// finish on it. st must be complete (from Build) and non-nil.
func (g *Gateway) Store(st *State) {
	if st == nil {
		panic("BUG: hotpath: Store(nil)")
	}
	g.state.Store(st)
}

// Load returns the current State, or nil before the first Store.
func (g *Gateway) Load() *State { return g.state.Load() }

// SetDraining marks the gateway as draining (true) or not: while draining,
// /readyz answers 503 but requests are still served.
func (g *Gateway) SetDraining(d bool) { g.draining.Store(d) }
