package batch

import (
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// Calls naming an id: each goes to the id's target, for its owner only;
// anything else is 404 before any upstream call.

// read serves GET /v1/files/{id}, /v1/batches/{id} and
// /v1/messages/batches/{id}.
func (c *call) read(k *kind) {
	c.op = "read"
	t, o, ok := c.owned(k)
	if !ok {
		return
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if !c.objectCall(t, k, o.ID, fasthttp.MethodGet, "", resp) {
		return
	}
	c.answerObject(t, k, o, resp)
}

// cancel serves POST /v1/batches/{id}/cancel and
// /v1/messages/batches/{id}/cancel.
func (c *call) cancel(k *kind) {
	c.op = "cancel"
	t, o, ok := c.owned(k)
	if !ok || !c.countCall() {
		return
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if !c.objectCall(t, k, o.ID, fasthttp.MethodPost, "/cancel", resp) {
		return
	}
	c.answerObject(t, k, o, resp)
}

// remove serves DELETE /v1/files/{id} and /v1/messages/batches/{id}: once
// the target has deleted it, its record goes too.
func (c *call) remove(k *kind) {
	c.op = "delete"
	t, o, ok := c.owned(k)
	if !ok || !c.countCall() {
		return
	}
	if k.messages && !o.Charged && !c.meteredBeforeDelete(t, o) {
		return
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if !c.objectCall(t, k, o.ID, fasthttp.MethodDelete, "", resp) {
		return
	}
	ctx, cancel := c.storeCtx()
	err := c.s.Store.Delete(ctx, c.caller.Key(), k.obj, o.ID)
	cancel()
	if err != nil {
		// Deleted upstream: the record outlives it harmlessly (a later
		// call naming it gets the target's 404) until its retention ends.
		c.s.Log.Warn().Err(err).Str("id", o.ID).Msg("batch: deleted upstream but its record could not be removed")
	}
	c.relay(t, resp.StatusCode(), resp.Body())
}

// meteredBeforeDelete charges the caller's message batch o on t, when it
// has ended and is not charged yet, before its deletion is sent: the
// provider deletes the results with the batch, and a batch deleted before
// the gateway read them (never seen ended, or its read still queued after
// a download) would have run free. Its object is read; when it has ended
// its reservation is given back and its results are read and charged here,
// once (docs/batches.md, Quotas). false: answered, nothing deleted (the
// object or the results could not be read).
func (c *call) meteredBeforeDelete(t *upstream.Target, o tenancy.Object) bool {
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if !c.objectCall(t, kindMessages, o.ID, fasthttp.MethodGet, "", resp) {
		return false
	}
	v, ok := parseObject(resp.Body())
	ended := ok && str(v.v, "processing_status") == "ended"
	v.release()
	if !ended {
		return true // the provider refuses to delete a batch still processing
	}
	c.settle(t, o, nil, 0, false)
	err := c.s.meterOne(meterJob{t: t, o: o, st: c.st, seen: c.s.clock()})
	if err != nil && !errors.Is(err, errResultsGone) {
		c.s.Log.Warn().Err(err).Str("target", t.Name).Str("id", o.ID).
			Msg("batch: could not read a message batch's results to meter them before its deletion; the deletion was refused")
		c.rc.Response.Header.Set(fasthttp.HeaderRetryAfter, "10")
		c.fail(fasthttp.StatusServiceUnavailable, "the message batch's results could not be read to meter its usage before "+
			"its deletion; retry shortly", upstream.TypeUpstream, upstream.CodeUpstreamUnavailable)
		c.class = upstream.ClassServer
		return false
	}
	return true
}

// objectCall makes the call method on the caller's object id of kind k at
// its target t (path suffix "" or "/cancel"), with the client's Anthropic
// headers on a message batch, and reports whether t answered 2xx (in
// resp). Else the failure is answered, and an id t answered 404 for is
// forgotten (gone).
func (c *call) objectCall(t *upstream.Target, k *kind, id, method, suffix string, resp *fasthttp.Response) bool {
	x := &exchange{method: method, path: func(*upstream.Target) string { return objectPath(k, id, suffix) }}
	if k.messages {
		x.client = &c.rc.Request.Header
	}
	if c.walk([]*upstream.Target{t}, x, resp) == nil {
		c.gone(k, id)
		return false
	}
	return true
}

// answerObject relays the 2xx answer of t in resp about the caller's
// object o, after the gateway has taken what it needs from it: a batch's
// output and error files, its end (settlement), a message batch's
// results_url.
func (c *call) answerObject(t *upstream.Target, k *kind, o tenancy.Object, resp *fasthttp.Response) {
	body := resp.Body()
	switch k {
	case kindBatches:
		c.seenBatch(t, o, body)
	case kindMessages:
		c.seenMessageBatch(t, o, body)
		if x, ok := parseObject(body); ok {
			body = c.withResultsURL(x.v, o.ID, body)
			x.release()
		}
	}
	c.relay(t, resp.StatusCode(), body)
}

// gone forgets the caller's object when its target answered 404 for it:
// the provider no longer has it (expired or deleted elsewhere).
func (c *call) gone(k *kind, id string) {
	if c.rc.Response.StatusCode() != fasthttp.StatusNotFound || c.target == nil {
		return
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	_ = c.s.Store.Delete(ctx, c.caller.Key(), k.obj, id)
}
