package batch

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// Lists answer the caller's own ids only, newest first (the provider's
// created_at, then the gateway's record order) across every target that
// holds them, in each API's paging: limit (default 20, at most 100) and
// after on OpenAI's paths, after_id or before_id on Anthropic's. The ids
// come from the ownership store; each object is read from its target, so
// what a list shows is the provider's own view of it. A list is a read: it
// does not count against requests_per_minute.

// Paging bounds.
const (
	defaultLimit = 20
	maxLimit     = 100
	// listFetches bounds the objects of one page read at once.
	listFetches = 8
)

// list serves GET /v1/files, /v1/batches and /v1/messages/batches.
func (c *call) list(k *kind) {
	c.op = "list"
	args := c.rc.QueryArgs()
	page := tenancy.Page{Limit: defaultLimit}
	if v := args.Peek("limit"); v != nil {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > maxLimit {
			c.badRequest("limit " + quoteShort(v) + " is out of range; want 1 to " + strconv.Itoa(maxLimit))
			return
		}
		page.Limit = n
	}
	cursorName := "after"
	if k.messages {
		cursorName = "after_id"
		page.After, page.Before = string(args.Peek("after_id")), string(args.Peek("before_id"))
		if page.After != "" && page.Before != "" {
			c.badRequest("after_id and before_id are exclusive; send one")
			return
		}
		if page.Before != "" {
			cursorName = "before_id"
		}
	} else {
		page.After = string(args.Peek("after"))
	}
	var purpose string
	if k == kindFiles {
		purpose = string(args.Peek("purpose"))
		switch string(args.Peek("order")) {
		case "", "desc":
		case "asc":
			page.Ascending = true
		default:
			c.badRequest("order " + quoteShort(args.Peek("order")) + " is not asc or desc")
			return
		}
	}
	cursor := page.After + page.Before
	if cursor != "" && !validID([]byte(cursor)) {
		c.badRequest(cursorName + " " + strconv.Quote(cursor) + " names no " + k.noun + " of this key")
		return
	}
	objs, more, err := c.page(k, page, purpose)
	switch {
	case errors.Is(err, tenancy.ErrCursor):
		c.badRequest(cursorName + " " + strconv.Quote(cursor) + " names no " + k.noun + " of this key")
		return
	case err != nil:
		c.storeDown(err)
		return
	}
	bodies := c.fetchAll(k, objs)
	var out []byte
	if k.messages {
		out = append(out, `{"data":[`...)
	} else {
		out = append(out, `{"object":"list","data":[`...)
	}
	var first, last string
	for i, b := range bodies {
		if b == nil {
			continue
		}
		if first != "" {
			out = append(out, ',')
		} else {
			first = objs[i].ID
		}
		last = objs[i].ID
		out = append(out, b...)
	}
	out = append(out, `],"has_more":`...)
	out = strconv.AppendBool(out, more)
	out = append(out, `,"first_id":`...)
	out = appendID(out, first)
	out = append(out, `,"last_id":`...)
	out = appendID(out, last)
	out = append(out, '}')
	c.rc.SetStatusCode(fasthttp.StatusOK)
	c.rc.SetContentType("application/json")
	c.rc.SetBody(out)
	c.class = upstream.ClassOK
}

// appendID appends id as a JSON string, or null when "".
func appendID(b []byte, id string) []byte {
	if id == "" {
		return append(b, "null"...)
	}
	return strconv.AppendQuote(b, id)
}

// page returns the caller's objects of kind k for page p, of purpose
// (files; "" = any), reading further pages of the store when some are of
// another purpose.
func (c *call) page(k *kind, p tenancy.Page, purpose string) ([]tenancy.Object, bool, error) {
	ctx, cancel := c.storeCtx()
	defer cancel()
	if purpose == "" {
		return c.s.Store.List(ctx, c.caller.Key(), k.obj, p)
	}
	var out []tenancy.Object
	for {
		objs, more, err := c.s.Store.List(ctx, c.caller.Key(), k.obj, p)
		if err != nil {
			return nil, false, err
		}
		for _, o := range objs {
			if o.Purpose == purpose {
				if len(out) == p.Limit {
					return out, true, nil
				}
				out = append(out, o)
			}
		}
		if !more || len(objs) == 0 {
			return out, false, nil
		}
		p.After = objs[len(objs)-1].ID
	}
}

// fetchAll reads each object of objs from its target, a few at once, and
// returns their answers' bodies (redacted, a batch's output files recorded
// and its end settled, a message batch's results_url rewritten); nil for
// an object left out: its target no longer has it (its record is dropped),
// or the configuration no longer has its target. A failure of a target is
// left out too, and noted in the call's steps.
func (c *call) fetchAll(k *kind, objs []tenancy.Object) [][]byte {
	out := make([][]byte, len(objs))
	type result struct {
		t      *upstream.Target
		status int
		class  upstream.Class
		took   time.Duration
	}
	results := make([]result, len(objs))
	// The client's Anthropic headers, copied: the fetches read them at
	// once, and a request header is not safe for concurrent use.
	var h *fasthttp.RequestHeader
	if k.messages {
		h = &fasthttp.RequestHeader{}
		for _, name := range [...]string{"anthropic-version", "anthropic-beta"} {
			for _, v := range c.rc.Request.Header.PeekAll(name) {
				h.AddBytesV(name, v)
			}
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, listFetches)
	for i := range objs {
		o := objs[i]
		t := c.targetNamed(o.Target)
		if t == nil || !c.servesAPI(t, k) {
			continue
		}
		if !c.caller.Admits(t) {
			if g := c.s.Gateway; g != nil && g.Fenced != nil {
				g.Fenced(c.caller.Key(), t.Name)
			}
			c.reached(t, upstream.ClassClient, true)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.Header.SetMethod(fasthttp.MethodGet)
			t0 := time.Now()
			err := t.Transfer(req, resp, objectPath(k, o.ID, ""), h, t0.Add(t.Timeout))
			r := result{t: t, took: time.Since(t0), class: upstream.ClassOK}
			switch {
			case err != nil:
				r.class = errClass(err)
			case resp.StatusCode() < 200 || resp.StatusCode() > 299:
				r.status = resp.StatusCode()
				r.class, _ = classify(t, resp)
			default:
				r.status = resp.StatusCode()
				out[i] = append([]byte(nil), t.Redact(resp.Body())...)
			}
			results[i] = r
		}(i)
	}
	wg.Wait()
	obs := c.observer()
	for i, r := range results {
		if r.t == nil {
			continue
		}
		c.attempts++
		c.reached(r.t, r.class, false)
		obs.Attempt(r.t, r.class, r.status, r.took)
		o := objs[i]
		switch {
		case r.status == fasthttp.StatusNotFound:
			ctx, cancel := c.storeCtx()
			_ = c.s.Store.Delete(ctx, c.caller.Key(), k.obj, o.ID)
			cancel()
		case out[i] == nil:
		case k == kindBatches:
			c.seenBatch(r.t, o, out[i])
		case k == kindMessages:
			c.seenMessageBatch(r.t, o, out[i])
			if x, ok := parseObject(out[i]); ok {
				out[i] = c.withResultsURL(x.v, o.ID, out[i])
				x.release()
			}
		}
	}
	return out
}
