package provider

import (
	"bufio"
	"io"
	"strings"

	"github.com/switchyard/switchyard/router"
)

// NewStream returns a decoder of Anthropic's Messages SSE stream.
func (anthropicAdapter) NewStream(c *Call) StreamDecoder {
	return &anthropicStream{chatStream: chatStream{cw: newChunkWriter(c)}}
}

// anthropicStream translates Messages SSE events into chat.completion.chunk
// frames, one event at a time, holding back the role chunk of
// message_start (Anthropic's overloaded_error typically comes right after
// it). Not safe for concurrent use.
type anthropicStream struct {
	chatStream
	// raw is the upstream event being translated, as readEvent read it
	// (bounded by MaxSSEEvent); scratch its data when it has several data
	// lines. Both are kept for the next event.
	raw, scratch []byte
	usage        eventUsage
}

// Next implements StreamDecoder.
func (d *anthropicStream) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	if d.done {
		return dst, io.EOF
	}
	start := len(dst)
	for {
		// The SSE relays' reader: the event's data is its data lines
		// joined; an event the input ends in (no blank line after it) is
		// not dispatched, so a stream cut there is truncated.
		raw, ev, err := readEvent(d.raw[:0], r, router.SurfaceChat)
		d.raw = raw
		if err == io.EOF {
			return dst, truncatedStream()
		}
		if err != nil {
			return dst, err
		}
		data := ev.data(raw, &d.scratch)
		dst, err = d.withRole(dst, start, func(dst []byte) ([]byte, error) { return d.event(dst, data) })
		if err != nil || len(dst) > start {
			return dst, err
		}
	}
}

// event translates one event's data into zero or more frames.
func (d *anthropicStream) event(dst, data []byte) ([]byte, error) {
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		return dst, malformedEvent()
	}
	typ, _ := jsonStr(v.Get("type"))
	switch typ {
	case "message_start":
		m := v.Get("message")
		id, _ := jsonStr(m.Get("id"))
		d.cw.id = strings.Clone(id)
		if q, ok := fastjsonParts(m.Get("usage")); ok {
			d.usage.start(q)
		}
		// The role chunk leaves with the first frame that carries content.
		d.role = true
		return dst, nil
	case "content_block_start":
		cb := v.Get("content_block")
		switch t, _ := jsonStr(cb.Get("type")); t {
		case "text":
			if s, _ := jsonStr(cb.Get("text")); s != "" {
				return d.cw.text(dst, s), nil
			}
		case "tool_use":
			id, _ := jsonStr(cb.Get("id"))
			name, _ := jsonStr(cb.Get("name"))
			return d.toolStart(dst, v.GetInt("index"), id, name), nil
		}
	case "content_block_delta":
		delta := v.Get("delta")
		switch t, _ := jsonStr(delta.Get("type")); t {
		case "text_delta":
			if s, _ := jsonStr(delta.Get("text")); s != "" {
				return d.cw.text(dst, s), nil
			}
		case "input_json_delta":
			s, _ := jsonStr(delta.Get("partial_json"))
			return d.toolArgs(dst, v.GetInt("index"), s), nil
		}
	case "message_delta":
		// Each count given replaces the one before (the SDK's way).
		if q, ok := fastjsonParts(v.Get("usage")); ok {
			d.usage.overlay(q)
		}
		stop, _ := jsonStr(v.Get("delta", "stop_reason"))
		dst = d.cw.finish(dst, finishReason(stop))
		return d.cw.usage(dst, d.usage.u), nil
	case "message_stop":
		d.done = true
		return append(dst, doneFrame...), io.EOF
	case "error":
		msg, _ := jsonStr(v.Get("error", "message"))
		etyp, _ := jsonStr(v.Get("error", "type"))
		if msg == "" {
			msg = "anthropic stream error " + etyp
		}
		status := anthropicErrorStatus(etyp)
		cl := anthropicClass(status, msg)
		return dst, &StreamError{Class: cl, Status: status, Body: classEnvelope(cl, msg)}
	}
	// ping, content_block_stop, thinking blocks and event types added
	// after this adapter was written produce nothing.
	return dst, nil
}
