package batch

import (
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
	x := &exchange{method: fasthttp.MethodGet, path: func(*upstream.Target) string { return objectPath(k, o.ID, "") }}
	if k.messages {
		x.client = &c.rc.Request.Header
	}
	if c.walk([]*upstream.Target{t}, x, resp) == nil {
		c.gone(k, o.ID)
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
	x := &exchange{method: fasthttp.MethodPost, path: func(*upstream.Target) string { return objectPath(k, o.ID, "/cancel") }}
	if k.messages {
		x.client = &c.rc.Request.Header
	}
	if c.walk([]*upstream.Target{t}, x, resp) == nil {
		c.gone(k, o.ID)
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
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	x := &exchange{method: fasthttp.MethodDelete, path: func(*upstream.Target) string { return objectPath(k, o.ID, "") }}
	if k.messages {
		x.client = &c.rc.Request.Header
	}
	if c.walk([]*upstream.Target{t}, x, resp) == nil {
		c.gone(k, o.ID)
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
