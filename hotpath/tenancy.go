package hotpath

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// Response ownership (docs/residency.md): with client keys, a
// Responses API request may continue only a response its own key created.

// Error codes of response ownership.
const (
	codeResponseNotFound = "response_not_found"
	codeFileNotFound     = "file_not_found"
	codeItemNotFound     = "item_not_found"
	// codeStoreUnavailable: the ownership lives in the quota store.
	codeStoreUnavailable = "quota_store_unavailable"
)

// ownerTimeout bounds one ownership store call.
const ownerTimeout = 100 * time.Millisecond

var ownerParsers fastjson.ParserPool

// previousRefused answers and reports true when the request on surface s
// with key k names (id: the peek's Previous) a previous_response_id that k
// did not create: 404 response_not_found (the same answer as for an
// unknown id, so a key learns nothing of another's), or 503 when the store
// cannot answer. The peek read the id as an upstream's decoder does:
// escapes decoded, a second or case-folded copy refused.
func (g *Gateway) previousRefused(rc *fasthttp.RequestCtx, s router.Surface, k *clientKey, id []byte) bool {
	if s != router.SurfaceResponses || k == nil || g.Owners == nil || id == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownerTimeout)
	defer cancel()
	owner, err := g.Owners.Owner(ctx, string(id))
	switch {
	case err != nil:
		writeSurfaceError(rc, s, fasthttp.StatusServiceUnavailable,
			"the store of response owners is unavailable; retry shortly", upstream.TypeUpstream, codeStoreUnavailable)
		return true
	case owner != k.spec.Name:
		writeSurfaceError(rc, s, fasthttp.StatusNotFound,
			"previous_response_id "+strconv.Quote(string(id))+" was not found", upstream.TypeInvalidRequest, codeResponseNotFound)
		return true
	}
	return false
}

// rememberResponse records the id of a successful Responses API answer
// for key k, before the client receives it: from the body, or for a
// stream from its response.created event. A JSON answer's output items
// are recorded with it (a stream's when it ends: rememberItems), so that
// another key's request cannot pass them back by id. A store failure is
// reported to OwnerFailed; the answer is still served.
func (g *Gateway) rememberResponse(rc *fasthttp.RequestCtx, s router.Surface, k *clientKey, res *upstream.Result) {
	if s != router.SurfaceResponses || k == nil || g.Owners == nil || res.Status < 200 || res.Status > 299 || res.Fenced {
		return
	}
	id := res.ResponseID
	var items []string
	if !res.Stream {
		p := ownerParsers.Get()
		defer ownerParsers.Put(p)
		v, err := p.ParseBytes(rc.Response.Body())
		if err != nil {
			return
		}
		id = v.GetStringBytes("id")
		items = outputItemIDs(v.GetArray("output"))
	}
	if len(id) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownerTimeout)
	defer cancel()
	if err := g.Owners.Remember(ctx, string(id), k.spec.Name, tenancy.TTL); err != nil && g.OwnerFailed != nil {
		g.OwnerFailed(err)
	}
	g.rememberItems(keyName(k), items)
}

// outputItemIDs returns the ids of a Responses API answer's output items
// (those a request could name: at most maxItemIDBytes long).
func outputItemIDs(output []*fastjson.Value) []string {
	var ids []string
	for _, it := range output {
		if id := it.GetStringBytes("id"); len(id) > 0 && len(id) <= maxItemIDBytes {
			ids = append(ids, string(id))
		}
	}
	return ids
}

// rememberItems records the output item ids of a Responses API answer for
// the key named key (none without client keys). A store failure is
// reported to OwnerFailed.
func (g *Gateway) rememberItems(key string, ids []string) {
	if key == "" || g.Owners == nil || len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownerTimeout)
	defer cancel()
	if err := g.Owners.RememberAll(ctx, ids, key, tenancy.TTL); err != nil && g.OwnerFailed != nil {
		g.OwnerFailed(err)
	}
}

// refScan is the working memory of a body's stored-id check: pooled, as
// only a body that may name a stored object needs one.
type refScan struct {
	p    fastjson.Parser
	refs storedRefs
	// owners holds the owners of the ids looked up.
	owners []string
}

var refScans = sync.Pool{New: func() any { return new(refScan) }}

// holdsNone reports whether store is an in-process one holding no record
// at all (one atomic load): then no id can be another key's.
func holdsNone(store any) bool {
	l, ok := store.(interface{ Len() int })
	return ok && l.Len() == 0
}

// storedChecks says which stored ids a body of surface s is checked for,
// with client key k: file ids (files) on the chat, Responses and Messages
// surfaces when a store of file owners holds any (or unknown ids are
// refused), item ids (items) on the Responses surface when the store of
// response owners holds any.
func storedChecks(k *clientKey, s router.Surface, objects tenancy.ObjectStore, owners tenancy.OwnerStore, strict bool) (files, items bool) {
	if k == nil {
		return false, false // one tenant: no id is another's
	}
	switch s {
	case router.SurfaceChat, router.SurfaceResponses, router.SurfaceMessages:
	default:
		return false, false
	}
	files = objects != nil && (strict || !holdsNone(objects))
	items = s == router.SurfaceResponses && owners != nil && !holdsNone(owners)
	return files, items
}

// storedRefusal checks the stored ids that body, a request of key k, names
// (storedChecks says which): nil when none is another key's (nor, with
// strict, a file id no key owns); else 404 file_not_found or
// item_not_found, the same answer as for an id nobody created, or 503 when
// a store cannot answer, or 400 for a body that cannot be read.
func storedRefusal(k *clientKey, body []byte, files, items, strict bool, objects tenancy.ObjectStore, owners tenancy.OwnerStore) *Refusal {
	if !mayNameStored(body, files, items) {
		return nil
	}
	x := refScans.Get().(*refScan)
	defer refScans.Put(x)
	r := &x.refs
	if err := r.collect(&x.p, body, items); err != nil {
		return &Refusal{Status: fasthttp.StatusBadRequest, Type: upstream.TypeInvalidRequest, Code: upstream.CodeInvalidRequest,
			Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownerTimeout)
	defer cancel()
	key := k.spec.Name
	if files && len(r.Files) > 0 {
		x.owners = slices.Grow(x.owners[:0], len(r.Files))[:len(r.Files)]
		if err := objects.Owners(ctx, tenancy.KindFile, r.Files, x.owners); err != nil {
			return storeRefusal()
		}
		for i, o := range x.owners {
			if o != key && (o != "" || strict) {
				return &Refusal{Status: fasthttp.StatusNotFound, Type: upstream.TypeInvalidRequest, Code: codeFileNotFound,
					Message: "file " + strconv.Quote(r.Files[i]) + " was not found"}
			}
		}
	}
	if items && len(r.Items) > 0 {
		x.owners = slices.Grow(x.owners[:0], len(r.Items))[:len(r.Items)]
		if err := owners.Owners(ctx, r.Items, x.owners); err != nil {
			return storeRefusal()
		}
		for i, o := range x.owners {
			if o != "" && o != key {
				return &Refusal{Status: fasthttp.StatusNotFound, Type: upstream.TypeInvalidRequest, Code: codeItemNotFound,
					Message: "item " + strconv.Quote(r.Items[i]) + " was not found"}
			}
		}
	}
	return nil
}

func storeRefusal() *Refusal {
	return &Refusal{Status: fasthttp.StatusServiceUnavailable, Type: upstream.TypeUpstream, Code: codeStoreUnavailable,
		Message: "the store of object owners is unavailable; retry shortly"}
}

// storedRefused answers and reports true when the body of a request on
// surface s with key k names a stored object another key owns
// (storedRefusal); no upstream is called then.
func (g *Gateway) storedRefused(rc *fasthttp.RequestCtx, st *State, s router.Surface, k *clientKey, body []byte) bool {
	strict := st.Config.Server.RefusesUnknownFileIDs()
	files, items := storedChecks(k, s, g.Objects, g.Owners, strict)
	if !files && !items {
		return false
	}
	r := storedRefusal(k, body, files, items, strict, g.Objects, g.Owners)
	if r == nil {
		return false
	}
	writeSurfaceError(rc, s, r.Status, r.Message, r.Type, r.Code)
	return true
}
