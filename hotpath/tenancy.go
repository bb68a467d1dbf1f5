package hotpath

import (
	"context"
	"strconv"
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
// stream from its response.created event. A store failure is reported to
// OwnerFailed; the answer is still served.
func (g *Gateway) rememberResponse(rc *fasthttp.RequestCtx, s router.Surface, k *clientKey, res *upstream.Result) {
	if s != router.SurfaceResponses || k == nil || g.Owners == nil || res.Status < 200 || res.Status > 299 || res.Fenced {
		return
	}
	id := res.ResponseID
	if !res.Stream {
		p := ownerParsers.Get()
		defer ownerParsers.Put(p)
		v, err := p.ParseBytes(rc.Response.Body())
		if err != nil {
			return
		}
		id = v.GetStringBytes("id")
	}
	if len(id) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownerTimeout)
	defer cancel()
	if err := g.Owners.Remember(ctx, string(id), k.spec.Name, tenancy.TTL); err != nil && g.OwnerFailed != nil {
		g.OwnerFailed(err)
	}
}
