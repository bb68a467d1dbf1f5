package batch

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// kind is one kind of object the batch APIs hand out.
type kind struct {
	obj tenancy.Kind
	// noun names it in messages.
	noun string
	// base is the collection's path under a target's base URL.
	base string
	// messages: Anthropic's Message Batches (else OpenAI's shapes).
	messages bool
}

var (
	kindFiles    = &kind{obj: tenancy.KindFile, noun: "file", base: "/files"}
	kindBatches  = &kind{obj: tenancy.KindBatch, noun: "batch", base: "/batches"}
	kindMessages = &kind{obj: tenancy.KindMessageBatch, noun: "message batch", base: "/v1/messages/batches", messages: true}
)

// servesAPI reports whether target t (of State st's router) keeps objects
// of kind k: Anthropic's Message Batches on a target taking messages in a
// batch, OpenAI's Files and Batches on one taking any of their surfaces.
func (c *call) servesAPI(t *upstream.Target, k *kind) bool {
	if k.messages {
		return c.st.Router.ServesBatch(t.Index, router.SurfaceMessages)
	}
	for _, s := range lineSurfaces {
		if c.st.Router.ServesBatch(t.Index, s) {
			return true
		}
	}
	return false
}

// owned finds the caller's object of kind k named by the path's id, and
// the target that holds it. When the caller has none (never handed out to
// it, handed to another key, expired or deleted) it answers 404, with no
// upstream call, and reports false; a store failure is 503.
func (c *call) owned(k *kind) (*upstream.Target, tenancy.Object, bool) {
	ctx, cancel := c.storeCtx()
	defer cancel()
	o, ok, err := c.s.Store.Get(ctx, c.caller.Key(), k.obj, string(c.id))
	if err != nil {
		c.storeDown(err)
		return nil, o, false
	}
	if !ok {
		c.notFound("no " + k.noun + " " + strconv.Quote(string(c.id)) + " was found")
		return nil, o, false
	}
	c.model = firstModel(o.Models)
	t := c.targetNamed(o.Target)
	if t == nil || !c.servesAPI(t, k) {
		c.notFound("the " + k.noun + " " + strconv.Quote(string(c.id)) + " is held by target " + strconv.Quote(o.Target) +
			", which the configuration no longer has (or no longer keeps " + k.noun + "s)")
		return nil, o, false
	}
	return t, o, true
}

func firstModel(models []string) []byte {
	if len(models) == 0 {
		return nil
	}
	return []byte(models[0])
}

// objectPath is the path of the object id of kind k under a target's base
// URL, with suffix ("", "/cancel", "/content", "/results").
func objectPath(k *kind, id, suffix string) string { return k.base + "/" + id + suffix }

// parsed is an answer's JSON object, parsed once.
type parsed struct {
	p *fastjson.Parser
	v *fastjson.Value
}

var parsers fastjson.ParserPool

// parseObject parses body as one JSON object; ok is false when it is not.
func parseObject(body []byte) (parsed, bool) {
	p := parsers.Get()
	v, err := p.ParseBytes(body)
	if err != nil || v.Type() != fastjson.TypeObject {
		parsers.Put(p)
		return parsed{}, false
	}
	return parsed{p: p, v: v}, true
}

func (x parsed) release() {
	if x.p != nil {
		parsers.Put(x.p)
	}
}

// str returns the string member key of v ("" when absent or not one).
func str(v *fastjson.Value, keys ...string) string {
	if v == nil {
		return ""
	}
	return string(v.GetStringBytes(keys...))
}

// createdAt reads an object's created_at: Unix seconds (OpenAI) or an
// RFC 3339 time (Anthropic); now when there is none.
func createdAt(v *fastjson.Value, now time.Time) int64 {
	c := v.Get("created_at")
	if c == nil {
		return now.Unix()
	}
	switch c.Type() {
	case fastjson.TypeNumber:
		return c.GetInt64()
	case fastjson.TypeString:
		if t, err := time.Parse(time.RFC3339Nano, string(c.GetStringBytes())); err == nil {
			return t.Unix()
		}
	}
	return now.Unix()
}

// protocolError answers a 2xx the gateway cannot use (no id it can
// record): the upstream broke the protocol.
func (c *call) protocolError(what string) {
	c.fail(fasthttp.StatusBadGateway, "upstream answered without "+what, upstream.TypeUpstream, upstream.CodeUpstreamError)
	c.class = upstream.ClassTransport
}

// relay answers the upstream's 2xx JSON answer body (redacted of t's
// credentials) with its status.
func (c *call) relay(t *upstream.Target, status int, body []byte) {
	c.rc.SetStatusCode(status)
	c.rc.SetContentType("application/json")
	c.rc.SetBody(t.Redact(body))
	c.class = upstream.ClassOK
}
