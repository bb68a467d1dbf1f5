package provider

import (
	"bufio"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/router"
)

// eventStream is one stream of a named-event surface: the shared
// eventDecoder plus the usage the stream reported, for the token metrics
// and the quotas. Not safe for concurrent use.
type eventStream struct {
	d       *eventDecoder
	usage   eventUsage
	scratch []byte // the joined data of an event with several data lines
}

// newEventStream returns a per-stream decoder over d.
func newEventStream(d *eventDecoder) StreamDecoder { return &eventStream{d: d} }

// Next implements StreamDecoder.
func (s *eventStream) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	return s.d.next(dst, r, &s.usage, &s.scratch)
}

// Usage implements UsageReporter.
func (s *eventStream) Usage() Usage { return s.usage.u }

// OutputItemIDs implements ItemReporter.
func (s *eventStream) OutputItemIDs() []string { return s.usage.items }

// ItemReporter is a StreamDecoder of Responses API streams that reports
// the ids of the output items its terminal event listed (nil: none), so
// that their owner can be recorded (docs/residency.md).
type ItemReporter interface {
	OutputItemIDs() []string
}

// eventUsage is the usage a stream reported so far: the counts as its
// events gave them, and their sum; and on responses the output items'
// ids.
type eventUsage struct {
	parts usageParts
	u     Usage
	items []string
}

// note reads the usage of the few events that carry it, leaving every
// other event unparsed: on responses, response.completed's (or
// response.incomplete's) response.usage, parsed whole (the one terminal
// event); on messages, message_start's message.usage (the input and the
// cache's counts; its output is a placeholder) and message_delta's
// top-level usage (read with ReadUsage's reader), each count of which
// replaces the one before, as Anthropic's SDK accumulates them.
func (e *eventUsage) note(s router.Surface, name, data []byte) {
	switch {
	case s == router.SurfaceResponses && (string(name) == "response.completed" || string(name) == "response.incomplete"):
		p := parserPool.Get()
		defer parserPool.Put(p)
		v, err := p.ParseBytes(data)
		if err != nil {
			return
		}
		if q, ok := fastjsonParts(v.Get("response", "usage")); ok {
			e.set(q)
		}
		e.items = e.items[:0]
		for _, it := range v.GetArray("response", "output") {
			if id := it.GetStringBytes("id"); len(id) > 0 {
				e.items = append(e.items, string(id))
			}
		}
	case s == router.SurfaceMessages && string(name) == "message_start":
		e.messageStart(data)
	case s == router.SurfaceMessages && string(name) == "message_delta":
		e.messageDelta(data)
	}
}

// set makes q the stream's usage when its counts add up.
func (e *eventUsage) set(q usageParts) {
	if u, ok := q.resolve(); ok {
		e.parts, e.u = q, u
	}
}

// messageStart notes an Anthropic message_start event's data.
func (e *eventUsage) messageStart(data []byte) {
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		return
	}
	if q, ok := fastjsonParts(v.Get("message", "usage")); ok {
		e.start(q)
	}
}

// start notes the usage q of an Anthropic message_start: the input and the
// cache's counts; its output count is a placeholder that message_delta
// replaces, and is left out.
func (e *eventUsage) start(q usageParts) {
	q.has &^= hasOutput
	e.overlay(q)
}

// messageDelta notes an Anthropic message_delta event's data.
func (e *eventUsage) messageDelta(data []byte) {
	if q, ok := readUsageParts(data); ok {
		e.overlay(q)
	}
}

// overlay lays q over the counts so far (see usageParts.overlay).
func (e *eventUsage) overlay(q usageParts) {
	next := e.parts
	next.overlay(q)
	e.set(next)
}

// fastjsonParts reads a parsed usage object as ReadUsage reads one from
// bytes: the same names (usage_fields.go), the same doubts. ok is false
// when o is not an object or a count is doubtful.
func fastjsonParts(o *fastjson.Value) (p usageParts, ok bool) {
	if o == nil || o.Type() != fastjson.TypeObject {
		return usageParts{}, false
	}
	obj, _ := o.Object()
	sure := true
	obj.Visit(func(k []byte, x *fastjson.Value) {
		f := usageFieldOf(k)
		switch {
		case f == fieldNone || x.Type() == fastjson.TypeNull:
		case f == fieldDetails:
			if x.Type() != fastjson.TypeObject || !p.details() {
				sure = false
				return
			}
			d, _ := x.Object()
			d.Visit(func(dk []byte, dx *fastjson.Value) {
				if !isDetail(dk) || dx.Type() == fastjson.TypeNull {
					return
				}
				n, good := fastjsonCount(dx)
				if !good || !p.setDetail(dk, n) {
					sure = false
				}
			})
		default:
			n, good := fastjsonCount(x)
			if !good || !p.set(f, n) {
				sure = false
			}
		}
	})
	return p, sure
}

// fastjsonCount reads a count as scanner.count does: a non-negative
// integer of at most maxCountDigits digits, without sign, fraction,
// exponent or leading zero, checked on the number as written.
func fastjsonCount(x *fastjson.Value) (int64, bool) {
	if x.Type() != fastjson.TypeNumber {
		return 0, false
	}
	var buf [32]byte
	raw := x.MarshalTo(buf[:0]) // a number marshals as written
	s := scanner{b: raw}
	n, ok := s.count()
	return n, ok && s.i == len(raw)
}
