package provider

import (
	"bufio"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/router"
)

// eventStream is one stream of a named-event surface: the shared
// eventDecoder plus the usage the stream reported, for the token metrics.
// Not safe for concurrent use.
type eventStream struct {
	d       *eventDecoder
	usage   Usage
	scratch []byte // the joined data of an event with several data lines
}

// newEventStream returns a per-stream decoder over d.
func newEventStream(d *eventDecoder) StreamDecoder { return &eventStream{d: d} }

// Next implements StreamDecoder.
func (s *eventStream) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	return s.d.next(dst, r, &s.usage, &s.scratch)
}

// Usage implements UsageReporter.
func (s *eventStream) Usage() Usage { return s.usage }

// noteEventUsage reads the usage of the few events that carry it, leaving
// every other event unparsed: on responses, response.completed's
// response.usage (parsed whole: the one terminal event); on messages,
// message_start's message.usage (the prompt) and message_delta's top-level
// usage (the completion so far, read with ReadUsage).
func noteEventUsage(u *Usage, s router.Surface, name, data []byte) {
	switch {
	case s == router.SurfaceResponses && string(name) == "response.completed":
		p := parserPool.Get()
		defer parserPool.Put(p)
		v, err := p.ParseBytes(data)
		if err != nil {
			return
		}
		if got, ok := fastjsonUsage(v.Get("response", "usage")); ok {
			*u = got
		}
	case s == router.SurfaceMessages && string(name) == "message_start":
		p := parserPool.Get()
		defer parserPool.Put(p)
		v, err := p.ParseBytes(data)
		if err != nil {
			return
		}
		if got, ok := fastjsonUsage(v.Get("message", "usage")); ok && got.HasPrompt {
			u.Prompt, u.HasPrompt = got.Prompt, true
		}
	case s == router.SurfaceMessages && string(name) == "message_delta":
		got, ok := ReadUsage(data)
		if !ok {
			return
		}
		if got.HasCompletion {
			u.Completion, u.HasCompletion = got.Completion, true
		}
		if got.HasPrompt { // newer API versions repeat the input here
			u.Prompt, u.HasPrompt = got.Prompt, true
		}
	}
}

// fastjsonUsage reads a usage object as ReadUsage does (input_tokens plus
// Anthropic's cache counts, output_tokens; or OpenAI's names), from a
// parsed value. ok is false when a count is not a non-negative integer.
func fastjsonUsage(o *fastjson.Value) (u Usage, ok bool) {
	if o == nil || o.Type() != fastjson.TypeObject {
		return Usage{}, false
	}
	count := func(key string) (int64, bool, bool) { // value, present, valid
		x := o.Get(key)
		if x == nil || x.Type() == fastjson.TypeNull {
			return 0, false, true
		}
		n, err := x.Int64()
		if x.Type() != fastjson.TypeNumber || err != nil || n < 0 {
			return 0, true, false
		}
		return n, true, true
	}
	sure := true
	pick := func(a, b string) (int64, bool) {
		x, hasX, okX := count(a)
		y, hasY, okY := count(b)
		if !okX || !okY || (hasX && hasY) {
			sure = false
		}
		return x + y, hasX || hasY
	}
	u.Prompt, u.HasPrompt = pick("prompt_tokens", "input_tokens")
	u.Completion, u.HasCompletion = pick("completion_tokens", "output_tokens")
	cw, _, okW := count("cache_creation_input_tokens")
	cr, _, okR := count("cache_read_input_tokens")
	if !sure || !okW || !okR {
		return Usage{}, false
	}
	if u.HasPrompt {
		u.Prompt += cw + cr
	}
	return u, u.Known()
}
