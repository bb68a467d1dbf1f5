package hotpath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/internal/jsonscan"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// The batch APIs' gate (docs/batches.md): the Files, Batches and Message
// Batches paths are served by a BatchServer (package batch) once the
// handler has screened the request and checked its client key; the
// requests a stored batch describes are routed by a LineRouter, the same
// peek, allow-list, bindings and Match a request of their surface meets.

// BatchServer serves the batch API paths. Implementations are safe for
// concurrent use.
type BatchServer interface {
	// ServeBatch answers one request on a batch API path, on State st,
	// from caller c (its client key checked). It writes the answer into rc
	// and reports it to the Gateway's Finished hook itself.
	ServeBatch(rc *fasthttp.RequestCtx, st *State, c Caller)
}

// Caller is the client of a batch API request as the handler found it: its
// client key (none without an auth block) and its header section. Valid
// during the request only.
type Caller struct {
	key     *clientKey
	h       *head
	owners  tenancy.OwnerStore
	objects tenancy.ObjectStore
}

// Key is the caller's client key name; "" without an auth block.
func (c Caller) Key() string { return keyName(c.key) }

// Admits reports whether the caller's key may reach target t (its
// residency guard; every target without one).
func (c Caller) Admits(t *upstream.Target) bool { return c.key.fenceOf().Admits(t.Index) }

// TraceContext returns the W3C trace context to forward upstream, as the
// walk forwards it.
func (c Caller) TraceContext() (parent, state []byte) { return c.h.trace() }

// isBatchPath reports whether path is under the batch APIs' paths:
// /v1/files, /v1/batches or /v1/messages/batches, or one of their
// sub-paths.
func isBatchPath(path []byte) bool {
	for _, p := range [...]string{"/v1/files", "/v1/batches", "/v1/messages/batches"} {
		if bytes.HasPrefix(path, []byte(p)) && (len(path) == len(p) || path[len(p)] == '/') {
			return true
		}
	}
	return false
}

// batch serves a request on a batch API path: no configuration or no
// BatchServer answers as for an unknown path; otherwise the client key is
// checked (from the head, as on every API path) and the audit log's room,
// and the BatchServer answers.
func (g *Gateway) batch(rc *fasthttp.RequestCtx, st *State, h *head) {
	s := pathSurface(rc.URI().PathOriginal())
	if st == nil {
		writeNoConfig(rc)
		g.finishEarly(rc, telemetry.SurfaceNone, telemetry.RuleNotRouted, nil)
		return
	}
	if g.Batches == nil {
		writeError(rc, fasthttp.StatusNotFound, "unknown path "+strconv.Quote(string(rc.URI().PathOriginal())),
			upstream.TypeInvalidRequest, upstream.CodeNotFound)
		g.finishEarly(rc, telemetry.SurfaceNone, telemetry.RuleNotRouted, nil)
		return
	}
	key, ok := authenticateHead(rc, st, s, h)
	if !ok {
		g.finishEarly(rc, telemetry.SurfaceNone, telemetry.RuleNotRouted, nil)
		return
	}
	if g.auditRefused(rc, s) {
		g.finishKeyed(rc, telemetry.SurfaceNone, telemetry.RuleNotRouted, nil, keyName(key))
		return
	}
	g.Batches.ServeBatch(rc, st, Caller{key: key, h: h, owners: g.Owners, objects: g.Objects})
}

// Refusal is why a request described inside a stored batch does not route,
// as the client is told: an HTTP status and the error's type, code and
// message.
type Refusal struct {
	Status              int
	Type, Code, Message string
}

func (r *Refusal) Error() string { return r.Message }

// Line is where one request described inside a stored batch routes.
type Line struct {
	// Rule is the matched condition (-1: the fallback); Chain is its chain
	// (owned by the State's router: never modify it).
	Rule  int
	Chain []int
	// Model is the model the request names (valid until the next Route);
	// ModelAt and ModelEnd are where its string literal, quotes included,
	// lies in the body routed.
	Model             []byte
	ModelAt, ModelEnd int
}

// LineRouter routes the requests one upload describes, each exactly as a
// request of its surface from the same caller would be: the peek of its
// body, the client key's allow-list and bindings, the upload's own
// X-Gateway-Metadata (read once) and the router's Match. Not safe for
// concurrent use; valid during the upload's request only.
type LineRouter struct {
	st      *State
	key     *clientKey
	owners  tenancy.OwnerStore
	objects tenancy.ObjectStore
	p       peek
	meta    router.MetadataParser
	pairs   []router.Pair // the header's entries (parsed once)
	buf     []router.Pair // the entries a line routes with, bindings merged
	// owned is the last previous_response_id found to be the key's.
	owned string
}

// LineRouter returns the router of the requests c's upload describes, on
// State st. A repeated or malformed X-Gateway-Metadata is a 400 Refusal.
func (c Caller) LineRouter(st *State) (*LineRouter, *Refusal) {
	lr := &LineRouter{st: st, key: c.key, owners: c.owners, objects: c.objects}
	if c.h.nMeta > 1 {
		return nil, &Refusal{Status: fasthttp.StatusBadRequest, Type: upstream.TypeInvalidRequest, Code: upstream.CodeInvalidRequest,
			Message: headerMetadata + " is sent more than once; send it once"}
	}
	pairs, err := lr.meta.Parse(c.h.meta)
	if err != nil {
		return nil, &Refusal{Status: fasthttp.StatusBadRequest, Type: upstream.TypeInvalidRequest, Code: upstream.CodeInvalidRequest,
			Message: err.Error()}
	}
	lr.pairs = pairs
	return lr, nil
}

// Route routes body, a request of surface s, as the hot path routes one:
// the peek's refusals are 400, a model outside the key's allow-list 403
// model_not_allowed, a previous_response_id the key did not create 404
// response_not_found, a stored file or item another key owns 404
// file_not_found or item_not_found (the provider runs a stored batch's
// requests with its own credential, so it would read any key's). Which of
// the chain's members may take it is the caller's to decide
// (router.Snapshot.ServesModel, ServesSurface and ServesBatch).
func (lr *LineRouter) Route(s router.Surface, body []byte) (Line, *Refusal) {
	p := &lr.p
	if err := p.parseFor(body, s); err != nil {
		return Line{}, &Refusal{Status: fasthttp.StatusBadRequest, Type: upstream.TypeInvalidRequest,
			Code: upstream.CodeInvalidRequest, Message: err.Error()}
	}
	if lr.key != nil && !lr.key.allow.Has(p.Model) {
		return Line{}, &Refusal{Status: fasthttp.StatusForbidden, Type: upstream.TypeInvalidRequest, Code: codeModelNotAllowed,
			Message: "model " + strconv.Quote(string(p.Model)) + " is not allowed for this client key"}
	}
	if r := lr.previousRefused(p.Previous); r != nil {
		return Line{}, r
	}
	strict := lr.st.Config.Server.RefusesUnknownFileIDs()
	if files, items := storedChecks(lr.key, s, lr.objects, lr.owners, strict); files || items {
		if r := storedRefusal(lr.key, body, files, items, strict, lr.objects, lr.owners); r != nil {
			return Line{}, r
		}
	}
	req := router.Request{Surface: s, Model: p.Model, User: p.User, HasUser: p.HasUser,
		Stream: p.Stream && s.ChatLike(), HasTools: p.HasTools}
	if s.ChatLike() {
		req.Metadata = lr.pairs
	}
	if lr.key != nil {
		lr.buf = router.Bind(&req, &lr.key.spec, lr.buf)
	}
	rule, chain := lr.st.Router.Match(&req)
	return Line{Rule: rule, Chain: chain, Model: p.Model, ModelAt: p.ModelAt, ModelEnd: p.ModelEnd}, nil
}

// previousRefused checks that the key created the response id a request
// continues (nil: none), as the hot path does for a request
// (Gateway.previousRefused).
func (lr *LineRouter) previousRefused(id []byte) *Refusal {
	if id == nil || lr.key == nil || lr.owners == nil || string(id) == lr.owned {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownerTimeout)
	defer cancel()
	owner, err := lr.owners.Owner(ctx, string(id))
	switch {
	case err != nil:
		return &Refusal{Status: fasthttp.StatusServiceUnavailable, Type: upstream.TypeUpstream, Code: codeStoreUnavailable,
			Message: "the store of response owners is unavailable; retry shortly"}
	case owner != lr.key.spec.Name:
		return &Refusal{Status: fasthttp.StatusNotFound, Type: upstream.TypeInvalidRequest, Code: codeResponseNotFound,
			Message: "previous_response_id " + strconv.Quote(string(id)) + " was not found"}
	}
	lr.owned = string(id)
	return nil
}

// ObjectMembers reads the JSON object b (whitespace around it allowed,
// nothing after it) member by member, checking it as the peek checks the
// values of a body it does not route on: strings terminated, brackets
// balanced, nesting bounded, scalars well-formed. fn receives each member's
// key, unescaped (an invalid one is an error), and its value's bytes; an
// error from fn ends the read and is returned. It is how the lines of a
// batch file and the requests of a message batch are split, so that the
// bytes routed are read as the hot path reads a request.
func ObjectMembers(b []byte, fn func(key string, value []byte) error) error {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		if i >= len(b) {
			return errors.New("not a JSON object: it is empty")
		}
		return fmt.Errorf("not a JSON object: %q at offset %d", b[i], i)
	}
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return trailing(b, i+1)
	}
	var key []byte
	for {
		if i >= len(b) || b[i] != '"' {
			return syntaxError(b, i, "a key")
		}
		end := jsonscan.StringEnd(b, i)
		if end >= len(b) {
			return errUnterminated
		}
		k, ok := appendString(key[:0], b[i+1:end])
		if !ok {
			return errors.New("a key is not a valid JSON string of UTF-8 text")
		}
		key = k
		if i = jsonscan.SkipSpace(b, end+1); i >= len(b) || b[i] != ':' {
			return syntaxError(b, i, "':'")
		}
		if i = jsonscan.SkipSpace(b, i+1); i >= len(b) {
			return syntaxError(b, i, "a value")
		}
		if !startsValue(b[i]) {
			return syntaxError(b, i, "a value")
		}
		start := i
		var err error
		if i, err = skipValue(b, i, 1); err != nil {
			return err
		}
		if err = fn(string(key), b[start:i]); err != nil {
			return err
		}
		if i = jsonscan.SkipSpace(b, i); i < len(b) {
			switch b[i] {
			case ',':
				i = jsonscan.SkipSpace(b, i+1)
				continue
			case '}':
				return trailing(b, i+1)
			}
		}
		return syntaxError(b, i, "',' or '}'")
	}
}

// trailing refuses anything but whitespace after b[:i].
func trailing(b []byte, i int) error {
	if i = jsonscan.SkipSpace(b, i); i != len(b) {
		return syntaxError(b, i, "the end after the object")
	}
	return nil
}

// JSONString returns the text of the JSON string literal v (quotes
// included), unescaped; ok is false when v is not one or is not valid
// UTF-8 text.
func JSONString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || jsonscan.StringEnd(v, 0) != len(v)-1 {
		return "", false
	}
	s, ok := appendString(nil, v[1:len(v)-1])
	return string(s), ok
}
