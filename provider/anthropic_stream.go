package provider

import (
	"bufio"
	"bytes"
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
	sse   sseReader
	usage usage
}

// Next implements StreamDecoder.
func (d *anthropicStream) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	if d.done {
		return dst, io.EOF
	}
	start := len(dst)
	for {
		data, err := d.sse.next(r)
		if err == io.EOF {
			return dst, truncatedStream()
		}
		if err != nil {
			return dst, err
		}
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
		d.usage = anthropicUsage(m.Get("usage"))
		d.usage.completion = 0 // counted by message_delta
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
		if u := v.Get("usage"); u != nil {
			d.usage.completion = u.GetInt64("output_tokens")
			if u.Exists("input_tokens") {
				cached := d.usage.cached
				d.usage = anthropicUsage(u)
				d.usage.cached = max(d.usage.cached, cached)
			}
		}
		stop, _ := jsonStr(v.Get("delta", "stop_reason"))
		dst = d.cw.finish(dst, finishReason(stop))
		return d.cw.usage(dst, d.usage), nil
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

// sseReader splits a text/event-stream into events and returns each
// event's data (data lines joined by "\n"). Other fields are ignored: the
// providers repeat the event name inside the data. An event (all its lines,
// comments included, up to its blank line) is bounded by MaxSSEEvent, as in
// the OpenAI-compatible relay: an upstream sending bytes with no newline, or
// lines with no blank line, gets an oversizedEvent error after at most
// MaxSSEEvent plus one bufio.Reader buffer of input, instead of growing line
// or data until the process runs out of memory. Not safe for concurrent use.
type sseReader struct {
	line []byte // a line longer than the bufio.Reader's buffer
	data []byte
}

// next returns the data of the next event with data. The slice is valid
// until the next call. At the end of the input it returns io.EOF; an
// unterminated last event is still delivered first. An event over
// MaxSSEEvent bytes is an oversizedEvent error.
func (s *sseReader) next(r *bufio.Reader) ([]byte, error) {
	s.data = s.data[:0]
	hasData := false
	size := 0 // bytes of the current event read so far, line endings included
	for {
		line, n, err := s.readLine(r, MaxSSEEvent-size)
		if err != nil {
			if err == io.EOF && hasData {
				return s.data, nil
			}
			return nil, err
		}
		size += n
		if len(line) == 0 {
			if hasData {
				return s.data, nil
			}
			size = 0 // an event without data (a lone comment) is dropped
			continue
		}
		if line[0] == ':' {
			continue // comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue
		}
		// len(s.data) stays below size (each data line adds at most its
		// own length plus the joining "\n"), so size bounds it too.
		if hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		hasData = true
	}
}

// readLine returns the next line without its line ending, and the number of
// bytes it consumed (line ending included); a final line without one is
// returned before io.EOF. A line longer than limit bytes is an
// oversizedEvent error, returned once at most limit plus one buffer of
// bytes have been read.
func (s *sseReader) readLine(r *bufio.Reader, limit int) ([]byte, int, error) {
	s.line = s.line[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		if len(s.line)+len(chunk) > limit {
			return nil, 0, oversizedEvent(router.SurfaceChat)
		}
		if err == bufio.ErrBufferFull {
			s.line = append(s.line, chunk...)
			continue
		}
		line := chunk
		if len(s.line) > 0 {
			s.line = append(s.line, chunk...)
			line = s.line
		}
		if err != nil && (err != io.EOF || len(line) == 0) {
			return nil, 0, err
		}
		n := len(line)
		line = bytes.TrimSuffix(line, []byte("\n"))
		return bytes.TrimSuffix(line, []byte("\r")), n, nil
	}
}
