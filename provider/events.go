package provider

import (
	"bufio"
	"io"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/router"
)

// eventDecoder relays a stream of named SSE events ("event: …" + "data: …")
// event by event, byte for byte: the Responses API's (served by openai
// targets) or the Messages API's (anthropic targets). Neither ends with
// [DONE]: a stream ends cleanly at its terminal event (response.completed
// or response.incomplete; message_stop), which is relayed before io.EOF.
// An error event (event: error on both; response.failed on responses) is
// returned with its frame and a Framed *StreamError classified by its
// error type, so that as the first event it is an ordinary attempt failure
// (failover-safe or not) and after the commit it reaches the client as
// the upstream sent it. Events without a data line are dropped, as by
// SSEDecoder. Stateless (the event is found in the frame it builds), so
// one decoder per surface serves every stream; safe for concurrent use.
type eventDecoder struct {
	surface router.Surface
}

// The decoders of the two named-event surfaces.
var (
	responsesEvents = &eventDecoder{surface: router.SurfaceResponses}
	messagesEvents  = &eventDecoder{surface: router.SurfaceMessages}
)

// Next implements StreamDecoder. The events that only open a stream
// (response.created and response.in_progress; message_start and a ping
// right after it) are held back and returned in one frame with the event
// after them, so that an error there still comes before the first byte the
// client sees (as the translating Anthropic decoder holds message_start).
// Nothing later is held: a reasoning model's long silence before its first
// output must not count against the attempt's time to first byte.
func (d *eventDecoder) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	return d.next(dst, r, nil, nil)
}

// next is Next noting in u (when not nil) the usage the events report. An
// event with several data lines has them joined into *scratch (nil: a new
// buffer).
func (d *eventDecoder) next(dst []byte, r *bufio.Reader, u *eventUsage, scratch *[]byte) ([]byte, error) {
	start := len(dst)
	held := false
	for {
		var name, data []byte
		var err error
		dst, name, data, err = d.read(dst, r, scratch)
		if err != nil {
			return dst[:start], err
		}
		if u != nil {
			u.note(d.surface, name, data)
		}
		dst, err = d.event(dst, name, data)
		if err != nil {
			return dst, err
		}
		if held = d.opening(name, held); !held {
			return dst, nil
		}
	}
}

// read appends the next event with data (all its lines, byte for byte) to
// dst and returns its name and its data (its data lines joined, as the
// client reads them), which view dst or *scratch.
func (d *eventDecoder) read(dst []byte, r *bufio.Reader, scratch *[]byte) (out, name, data []byte, err error) {
	dst, ev, err := readEvent(dst, r, d.surface)
	if err != nil {
		if err == io.EOF {
			err = &StreamError{Class: ClassTransport, Status: 502,
				Body: AppendSurfaceError(nil, d.surface, 502, "upstream stream ended before its last event", TypeUpstream, CodeUpstreamError)}
		}
		return dst, nil, nil, err
	}
	if ev.nameAt >= 0 {
		name = dst[ev.nameAt:ev.nameEnd]
	}
	data = ev.data(dst, scratch)
	if len(name) == 0 {
		// An upstream that does not name its events: the APIs repeat the
		// name as the data's "type". Slow path.
		name = dataType(data)
	}
	return dst, name, data, nil
}

// opening reports whether an event named name is held back: it opens a
// stream, or it follows one held (held) and opens it too.
func (d *eventDecoder) opening(name []byte, held bool) bool {
	if d.surface == router.SurfaceMessages {
		switch string(name) {
		case "message_start":
			return true
		case "ping":
			return held
		}
		return false
	}
	switch string(name) {
	case "response.created":
		return true
	case "response.in_progress":
		return held
	}
	return false
}

// event decides what one complete event, the last in dst, is: an ordinary
// event, the stream's terminal event (io.EOF), or an error event.
func (d *eventDecoder) event(dst, name, data []byte) ([]byte, error) {
	if d.surface == router.SurfaceMessages {
		switch string(name) {
		case "message_stop":
			return dst, io.EOF
		case "error":
			return dst, messagesStreamError(data)
		}
		return dst, nil
	}
	switch string(name) {
	case "response.completed", "response.incomplete":
		return dst, io.EOF
	case "error", "response.failed":
		return dst, responsesStreamError(data)
	}
	if string(data) == doneData { // an OpenAI-compatible server's habit
		return dst, io.EOF
	}
	return dst, nil
}

// dataType returns the "type" string of an event's JSON data, or nil.
func dataType(data []byte) []byte {
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		return nil
	}
	// A copy: the parser goes back to its pool.
	return append([]byte(nil), v.GetStringBytes("type")...)
}

// messagesStreamError classifies a Messages API error event,
// {"type":"error","error":{"type":…,"message":…}}, by its error type as
// Anthropic's HTTP status for it would be (overloaded_error as 529, a
// server failure; "prompt is too long" as a context overflow). Its body is
// the event's data as sent when it is that envelope.
func messagesStreamError(data []byte) *StreamError {
	p := parserPool.Get()
	defer parserPool.Put(p)
	var typ, msg string
	shaped := false
	if v, err := p.ParseBytes(data); err == nil {
		e := v.Get("error")
		shaped = e != nil && e.Type() == fastjson.TypeObject
		typ, _ = jsonStr(v.Get("error", "type"))
		msg, _ = jsonStr(v.Get("error", "message"))
	}
	if msg == "" {
		msg = "anthropic stream error " + typ
	}
	status := anthropicErrorStatus(typ)
	cl := anthropicClass(status, msg)
	var body []byte
	if shaped {
		body = append(body, data...)
	} else {
		body = AppendAnthropicError(nil, AnthropicErrorType(status), msg)
	}
	return &StreamError{Class: cl, Status: status, Body: body, Framed: true}
}

// responsesStreamError classifies a Responses API error: an error event
// ({"type":"error","code","message"}, or the same fields in an "error"
// object) or response.failed ({"response":{"error":{"code","message"}}}).
// context_length_exceeded is a context overflow, rate limits a 429,
// invalid-request errors go back to the client, anything else (server_error
// and unknown codes) is a server failure. Its body is OpenAI's envelope.
func responsesStreamError(data []byte) *StreamError {
	p := parserPool.Get()
	defer parserPool.Put(p)
	var typ, code, msg string
	if v, err := p.ParseBytes(data); err == nil {
		e := v
		if r := v.Get("response"); r != nil && r.Type() == fastjson.TypeObject {
			e = r.Get("error")
		} else if x := v.Get("error"); x != nil && x.Type() == fastjson.TypeObject {
			e = x
		}
		if e != nil {
			if t, ok := jsonStr(e.Get("type")); ok && t != "error" {
				typ = t
			}
			code, _ = jsonStr(e.Get("code"))
			msg, _ = jsonStr(e.Get("message"))
		}
	}
	if msg == "" {
		msg = "upstream stream error " + code
	}
	st := &StreamError{Class: ClassServer, Status: 500, Framed: true}
	switch {
	case code == "context_length_exceeded" || containsFold(msg, "context_length_exceeded"):
		st.Class, st.Status = ClassContextLength, 400
	case code == "rate_limit_exceeded" || typ == "rate_limit_error" || typ == "tokens" || typ == "requests":
		st.Class, st.Status = ClassRateLimited, 429
	case typ == "invalid_request_error" || strings.HasPrefix(code, "invalid_"):
		st.Class, st.Status = ClassClient, 400
	}
	if typ == "" {
		typ = TypeUpstream
		if st.Class == ClassClient || st.Class == ClassContextLength {
			typ = TypeInvalidRequest
		}
	}
	if code == "" {
		code = CodeUpstreamError
		if st.Class == ClassClient {
			code = CodeInvalidRequest
		}
	}
	st.Body = AppendError(nil, msg, typ, code)
	return st
}
