package translate

import "github.com/valyala/fastjson"

// The members of an upstream chat completion chunk that the stream
// translators read (Messages and Responses alike), picked out in one pass
// over each object, the first copy of each as Get finds it: a Get of a
// member most chunks lack (error, usage, refusal, tool_calls) would scan
// every key of the object again.

// chatChunk is a chunk's top level.
type chatChunk struct {
	err, id, created, choices, usage *fastjson.Value
}

// read picks chunk's members out of o (nil: none).
func (c *chatChunk) read(o *fastjson.Object) {
	o.Visit(func(k []byte, v *fastjson.Value) {
		switch string(k) {
		case "error":
			c.err = first(c.err, v)
		case "id":
			c.id = first(c.id, v)
		case "created":
			c.created = first(c.created, v)
		case "choices":
			c.choices = first(c.choices, v)
		case "usage":
			c.usage = first(c.usage, v)
		}
	})
}

// chatChoice is one of a chunk's choices.
type chatChoice struct {
	index, delta, finish *fastjson.Value
}

// read picks the choice's members out of o (nil: none).
func (c *chatChoice) read(o *fastjson.Object) {
	o.Visit(func(k []byte, v *fastjson.Value) {
		switch string(k) {
		case "index":
			c.index = first(c.index, v)
		case "delta":
			c.delta = first(c.delta, v)
		case "finish_reason":
			c.finish = first(c.finish, v)
		}
	})
}

// chatDelta is a choice's delta.
type chatDelta struct {
	content, refusal, calls *fastjson.Value
}

// read picks the delta's members out of o (nil: none).
func (d *chatDelta) read(o *fastjson.Object) {
	o.Visit(func(k []byte, v *fastjson.Value) {
		switch string(k) {
		case "content":
			d.content = first(d.content, v)
		case "refusal":
			d.refusal = first(d.refusal, v)
		case "tool_calls":
			d.calls = first(d.calls, v)
		}
	})
}

// first is a member's value as Get finds it: the first copy.
func first(had, v *fastjson.Value) *fastjson.Value {
	if had != nil {
		return had
	}
	return v
}
