package translate

// A chat completion stream as the Responses API's event stream
// (docs/providers.md, Responses API on every provider).

import (
	"errors"
	"strconv"
	"sync"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/internal/jsonw"
)

// maxRespHeld bounds what a stream holds at once: the open message's text, the
// open tool call's arguments and the closed items the terminal event
// repeats. A model's longest answer is a few hundred KiB.
const maxRespHeld = 16 << 20

var (
	errRespChunk         = errors.New("malformed chunk in the upstream chat stream")
	errRespStreamEnded   = errors.New("chat stream chunk after the end of the stream")
	errRespToolCallOrder = errors.New("upstream chat stream continued a tool call after the next one began")
	errRespTooLong       = errors.New("upstream answer exceeds what the gateway holds for one response")
)

// respPart is a content part of the open message item.
type respPart struct {
	open  bool
	index int
	buf   []byte // its text so far (raw)
}

// responsesStream is the Stream of NewResponsesStream: a state machine fed
// one chat chunk at a time. It holds the open message item's text parts,
// the open tool call's arguments and the closed items' JSON (repeated by
// the terminal event, as OpenAI's is). Not safe for concurrent use.
type responsesStream struct {
	meta    respMeta
	idBuf   []byte // backs meta.base
	seq     int64
	started bool
	ended   bool
	next    int    // the next output_index
	finish  string // the chat finish_reason seen, as a constant
	usage   respUsage

	msg           bool // a message item is open
	msgIndex      int  // its output_index
	msgs          int  // message items opened
	msgID         []byte
	nparts        int
	text, refusal respPart

	call      bool // a tool call item is open
	callIndex int  // its output_index
	chatIndex int  // its index in the chat stream
	lastChat  int  // the highest chat index opened, -1 for none
	callID    []byte
	name      []byte // chat function name
	args      []byte
	custom    bool // decided when the call opens
	search    bool // the client's tool search: decided when the call opens

	output  []byte // the closed items, joined by commas
	scratch []byte
}

// NewResponsesStream returns the Stream that turns a chat completion
// stream into the Responses API's events for the client's model id: the
// lifecycle events at the first chunk, one output item per message or tool
// call (keyed by the chat tool call index), and response.completed (or
// response.incomplete) with usage at the end. Ids derive from the
// upstream's chat id.
func NewResponsesStream(model []byte) Stream {
	s := respStreams.Get().(*responsesStream)
	s.meta.model = append(s.meta.model, model...)
	return s
}

// respStreams holds released Responses streams, their buffers kept.
var respStreams = sync.Pool{New: func() any { return &responsesStream{lastChat: -1} }}

// Release implements Stream.
func (s *responsesStream) Release() {
	s.reset()
	respStreams.Put(s)
}

// reset returns s to the state of a new stream, for no model yet, keeping
// its buffers.
func (s *responsesStream) reset() {
	*s = responsesStream{
		meta:     respMeta{model: keepBuf(s.meta.model)},
		idBuf:    keepBuf(s.idBuf),
		msgID:    keepBuf(s.msgID),
		text:     respPart{buf: keepBuf(s.text.buf)},
		refusal:  respPart{buf: keepBuf(s.refusal.buf)},
		lastChat: -1,
		callID:   keepBuf(s.callID),
		name:     keepBuf(s.name),
		args:     keepBuf(s.args),
		output:   keepBuf(s.output),
		scratch:  keepBuf(s.scratch),
	}
}

// event appends an event's name and the start of its data, through the
// sequence_number; the caller appends the other fields and endRespEvent.
func (s *responsesStream) event(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, s.seq, 10)
	s.seq++
	return dst
}

func endRespEvent(dst []byte) []byte { return append(dst, "}\n\n"...) }

// start appends response.created and response.in_progress.
func (s *responsesStream) start(dst []byte, chatID string, created int64, data []byte) []byte {
	s.started = true
	s.idBuf = appendRespBase(s.idBuf[:0], chatID, data)
	s.meta.base, s.meta.created = s.idBuf, created
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		dst = s.event(dst, typ)
		dst = append(dst, `,"response":`...)
		dst = appendResponseObject(dst, &s.meta, respStatus{status: "in_progress"}, nil, respUsage{}, nil)
		dst = endRespEvent(dst)
	}
	return dst
}

// Chunk implements Stream. On an error the events already made for the
// chunk stay in the returned slice, each whole; the caller writes them,
// then Fail.
func (s *responsesStream) Chunk(dst, data []byte) ([]byte, error) {
	if s.ended {
		return dst, errRespStreamEnded
	}
	p := respParsers.Get()
	defer respParsers.Put(p)
	v, err := p.ParseBytes(data)
	top := v.GetObject()
	if err != nil || top == nil {
		return dst, errRespChunk
	}
	var ch chatChunk
	ch.read(top)
	errV, id, created, choices, usage := ch.err, ch.id, ch.created, ch.choices, ch.usage
	if !respNull(errV) {
		msg, _ := respStr(errV.Get("message"))
		return dst, errors.New("upstream chat stream error: " + msg)
	}
	if !s.started {
		id, _ := respStr(id)
		dst = s.start(dst, id, created.GetInt64(), data)
	}
	if choices != nil && choices.Type() == fastjson.TypeArray {
		arr, _ := choices.Array()
		for _, c := range arr {
			if dst, err = s.choice(dst, c); err != nil {
				return dst, err
			}
		}
	} else if !respNull(choices) {
		return dst, errRespChunk
	}
	if usage != nil && usage.Type() == fastjson.TypeObject {
		s.usage = readRespChatUsage(usage)
	}
	if len(s.text.buf)+len(s.refusal.buf)+len(s.args)+len(s.output) > maxRespHeld {
		return dst, errRespTooLong
	}
	return dst, nil
}

// choice translates one chunk's choice of index 0 (n is always 1 here):
// its text, refusal and tool call deltas, and its finish_reason.
func (s *responsesStream) choice(dst []byte, c *fastjson.Value) ([]byte, error) {
	o := c.GetObject()
	if o == nil {
		return dst, errRespChunk
	}
	var ch chatChoice
	ch.read(o)
	index, delta, finish := ch.index, ch.delta, ch.finish
	if index.GetInt() != 0 {
		return dst, nil
	}
	if d := delta.GetObject(); d != nil {
		var dl chatDelta
		dl.read(d)
		content, refusal, calls := dl.content, dl.refusal, dl.calls
		if t, _ := respStr(content); t != "" {
			dst = s.textDelta(dst, &s.text, t)
		}
		if t, _ := respStr(refusal); t != "" {
			dst = s.textDelta(dst, &s.refusal, t)
		}
		if calls != nil && calls.Type() == fastjson.TypeArray {
			arr, _ := calls.Array()
			for _, tc := range arr {
				var err error
				if dst, err = s.toolCallDelta(dst, tc); err != nil {
					return dst, err
				}
			}
		}
	}
	if f, ok := respStr(finish); ok && f != "" {
		switch f {
		case "length":
			s.finish = "length"
		case "content_filter":
			s.finish = "content_filter"
		default:
			s.finish = "stop"
		}
		dst = s.closeItems(dst)
	}
	return dst, nil
}

// textDelta appends the events of a text (or refusal) delta, opening the
// message item and the part first.
func (s *responsesStream) textDelta(dst []byte, part *respPart, t string) []byte {
	dst = s.closeCall(dst)
	if !s.msg {
		s.msg, s.msgIndex, s.nparts = true, s.next, 0
		s.next++
		s.msgID = appendRespMessageID(s.msgID[:0], &s.meta, s.msgs)
		s.msgs++
		dst = s.event(dst, "response.output_item.added")
		dst = appendRespKeyInt(dst, "output_index", int64(s.msgIndex))
		dst = append(dst, `,"item":`...)
		dst = appendRespMessageHead(dst, s.msgID, "in_progress")
		dst = endRespEvent(append(dst, "]}"...))
	}
	refusal := part == &s.refusal
	if !part.open {
		part.open, part.index, part.buf = true, s.nparts, part.buf[:0]
		s.nparts++
		dst = s.event(dst, "response.content_part.added")
		dst = s.partFields(dst, part)
		dst = append(dst, `,"part":`...)
		if refusal {
			dst = appendRespRefusalPart(dst, "")
		} else {
			dst = appendRespTextPart(dst, "")
		}
		dst = endRespEvent(dst)
	}
	part.buf = append(part.buf, t...)
	if refusal {
		dst = s.event(dst, "response.refusal.delta")
		dst = s.partFields(dst, part)
	} else {
		dst = s.event(dst, "response.output_text.delta")
		dst = s.partFields(dst, part)
		dst = append(dst, `,"logprobs":[]`...)
	}
	dst = appendRespKeyString(dst, "delta", t)
	return endRespEvent(dst)
}

// partFields appends item_id, output_index and content_index of a part of
// the open message.
func (s *responsesStream) partFields(dst []byte, part *respPart) []byte {
	dst = append(dst, `,"item_id":"`...)
	dst = append(dst, s.msgID...)
	dst = append(dst, '"')
	dst = appendRespKeyInt(dst, "output_index", int64(s.msgIndex))
	return appendRespKeyInt(dst, "content_index", int64(part.index))
}

// closeMessage appends the done events of the open message item and keeps
// the item for the terminal event.
func (s *responsesStream) closeMessage(dst []byte) []byte {
	if !s.msg {
		return dst
	}
	first, second := &s.text, &s.refusal
	if s.refusal.open && (!s.text.open || s.refusal.index < s.text.index) {
		first, second = second, first
	}
	for _, part := range [...]*respPart{first, second} {
		if !part.open {
			continue
		}
		text := byteconv.String(part.buf)
		if part == &s.refusal {
			dst = s.event(dst, "response.refusal.done")
			dst = s.partFields(dst, part)
			dst = appendRespKeyString(dst, "refusal", text)
		} else {
			dst = s.event(dst, "response.output_text.done")
			dst = s.partFields(dst, part)
			dst = append(dst, `,"logprobs":[]`...)
			dst = appendRespKeyString(dst, "text", text)
		}
		dst = endRespEvent(dst)
		dst = s.event(dst, "response.content_part.done")
		dst = s.partFields(dst, part)
		dst = append(dst, `,"part":`...)
		if part == &s.refusal {
			dst = appendRespRefusalPart(dst, text)
		} else {
			dst = appendRespTextPart(dst, text)
		}
		dst = endRespEvent(dst)
	}
	item := appendRespMessageHead(s.scratch[:0], s.msgID, respFinishStatus(s.finish).itemStatus())
	for i, part := range [...]*respPart{first, second} {
		if !part.open {
			continue
		}
		if i > 0 && first.open {
			item = append(item, ',')
		}
		if part == &s.refusal {
			item = appendRespRefusalPart(item, byteconv.String(part.buf))
		} else {
			item = appendRespTextPart(item, byteconv.String(part.buf))
		}
	}
	item = append(item, "]}"...)
	dst = s.itemDone(dst, s.msgIndex, item)
	s.scratch = item
	s.msg = false
	s.text.open, s.refusal.open = false, false
	s.text.buf, s.refusal.buf = s.text.buf[:0], s.refusal.buf[:0]
	return dst
}

// itemDone appends response.output_item.done for item and keeps it.
func (s *responsesStream) itemDone(dst []byte, index int, item []byte) []byte {
	dst = s.event(dst, "response.output_item.done")
	dst = appendRespKeyInt(dst, "output_index", int64(index))
	dst = append(dst, `,"item":`...)
	dst = append(dst, item...)
	dst = endRespEvent(dst)
	if len(s.output) > 0 {
		s.output = append(s.output, ',')
	}
	s.output = append(s.output, item...)
	return dst
}

// toolCallDelta translates one tool call delta: a new chat index opens an
// item (closing what was open), the same index continues it.
func (s *responsesStream) toolCallDelta(dst []byte, tc *fastjson.Value) ([]byte, error) {
	if tc.Type() != fastjson.TypeObject {
		return dst, errRespChunk
	}
	idx := -1
	if iv := tc.Get("index"); iv != nil {
		n, err := iv.Int()
		if err != nil || n < 0 {
			return dst, errRespChunk
		}
		idx = n
	}
	id, _ := respStr(tc.Get("id"))
	name, _ := respStr(tc.Get("function", "name"))
	args, _ := respStr(tc.Get("function", "arguments"))
	continues := s.call && (idx == s.chatIndex || idx < 0 && id == "")
	if !continues {
		if idx < 0 {
			idx = s.lastChat + 1
		}
		if idx <= s.lastChat {
			return dst, errRespToolCallOrder
		}
		dst = s.openCall(dst, idx, id, name)
	} else if name != "" && id == "" {
		s.name = append(s.name, name...) // a name sent in pieces
	}
	if args == "" {
		return dst, nil
	}
	s.args = append(s.args, args...)
	if s.custom || s.search { // the input (or search) is sent whole when the call closes
		return dst, nil
	}
	dst = s.event(dst, "response.function_call_arguments.delta")
	dst = s.callFields(dst)
	dst = appendRespKeyString(dst, "delta", args)
	return endRespEvent(dst), nil
}

// openCall closes what is open and appends output_item.added for a tool
// call; a call without an id gets one derived from the response's.
func (s *responsesStream) openCall(dst []byte, idx int, id, name string) []byte {
	dst = s.closeMessage(dst)
	dst = s.closeCall(dst)
	s.call, s.callIndex, s.chatIndex, s.lastChat = true, s.next, idx, idx
	s.next++
	s.callID = append(s.callID[:0], id...)
	if id == "" {
		s.callID = append(append(s.callID, "call_"...), s.meta.base...)
		s.callID = append(s.callID, '_')
		s.callID = strconv.AppendInt(s.callID, int64(idx), 10)
	}
	s.name = append(s.name[:0], name...)
	s.args = s.args[:0]
	c := s.respCallItem()
	s.custom, s.search = c.tool.custom, c.tool.search
	dst = s.event(dst, "response.output_item.added")
	dst = appendRespKeyInt(dst, "output_index", int64(s.callIndex))
	dst = append(dst, `,"item":`...)
	dst = appendRespCallItem(dst, &c, "in_progress", "")
	return endRespEvent(dst)
}

// respCallItem views the open tool call (valid until its buffers change).
func (s *responsesStream) respCallItem() respCallItem {
	return respCallItem{callID: byteconv.String(s.callID), tool: parseRespChatToolName(byteconv.String(s.name))}
}

// callFields appends item_id and output_index of the open tool call.
func (s *responsesStream) callFields(dst []byte) []byte {
	c := s.respCallItem()
	dst = append(dst, `,"item_id":`...)
	dst = appendRespCallItemID(dst, &c)
	return appendRespKeyInt(dst, "output_index", int64(s.callIndex))
}

// closeCall appends the done events of the open tool call: the arguments,
// or a custom tool's whole input, then the item.
func (s *responsesStream) closeCall(dst []byte) []byte {
	if !s.call {
		return dst
	}
	c := s.respCallItem()
	c.tool.custom, c.tool.search = s.custom, s.search
	payload := byteconv.String(s.args)
	switch {
	case s.search:
		// A tool search call has no events of its own: the item says it all.
		s.scratch = appendRespCallItem(s.scratch[:0], &c, respFinishStatus(s.finish).itemStatus(), payload)
	case s.custom:
		p := respParsers.Get()
		payload = respCustomInput(p, payload)
		dst = s.event(dst, "response.custom_tool_call_input.delta")
		dst = s.callFields(dst)
		dst = appendRespKeyString(dst, "delta", payload)
		dst = endRespEvent(dst)
		dst = s.event(dst, "response.custom_tool_call_input.done")
		dst = s.callFields(dst)
		dst = appendRespKeyString(dst, "input", payload)
		dst = endRespEvent(dst)
		s.scratch = appendRespCallItem(s.scratch[:0], &c, respFinishStatus(s.finish).itemStatus(), payload)
		respParsers.Put(p)
	default:
		dst = s.event(dst, "response.function_call_arguments.done")
		dst = s.callFields(dst)
		dst = appendRespKeyString(dst, "arguments", payload)
		dst = endRespEvent(dst)
		s.scratch = appendRespCallItem(s.scratch[:0], &c, respFinishStatus(s.finish).itemStatus(), payload)
	}
	dst = s.itemDone(dst, s.callIndex, s.scratch)
	s.call = false
	return dst
}

func (s *responsesStream) closeItems(dst []byte) []byte {
	return s.closeCall(s.closeMessage(dst))
}

// Done implements Stream: it closes what is open and appends
// response.completed, or response.incomplete when the length (or a content
// filter) cut the answer.
func (s *responsesStream) Done(dst []byte) ([]byte, error) {
	if s.ended {
		return dst, nil
	}
	if !s.started {
		dst = s.start(dst, "", 0, nil)
	}
	dst = s.closeItems(dst)
	st := respFinishStatus(s.finish)
	if st.status == "completed" {
		dst = s.event(dst, "response.completed")
	} else {
		dst = s.event(dst, "response.incomplete")
	}
	dst = append(dst, `,"response":`...)
	dst = appendResponseObject(dst, &s.meta, st, s.output, s.usage, nil)
	s.ended = true
	return endRespEvent(dst), nil
}

// Fail implements Stream: response.failed, whose response carries the
// error and the items already done, then the Responses API's error event
// with OpenAI's envelope beside it (the gateway's frame for a cut stream,
// on which the OpenAI SDKs raise).
func (s *responsesStream) Fail(dst []byte, status int, typ, code, message string) []byte {
	if s.ended {
		return dst
	}
	s.ended = true
	if code == "" {
		code = "server_error"
		if status == 429 {
			code = "rate_limit_exceeded"
		}
	}
	if !s.started {
		s.started = true
		s.idBuf = appendRespHash64(s.idBuf[:0], byteconv.Bytes(message))
		s.meta.base = s.idBuf
	}
	dst = s.event(dst, "response.failed")
	dst = append(dst, `,"response":`...)
	dst = appendResponseObject(dst, &s.meta, respStatus{status: "failed"}, s.output, s.usage,
		&respError{code: code, message: message, typ: typ})
	dst = endRespEvent(dst)
	dst = s.event(dst, "error")
	dst = appendRespKeyString(dst, "code", code)
	dst = appendRespKeyString(dst, "message", message)
	dst = append(dst, `,"param":null,"error":{"message":`...)
	dst = jsonw.String(dst, message)
	dst = appendRespKeyString(dst, "type", typ)
	dst = append(dst, `,"param":null`...)
	dst = appendRespKeyString(dst, "code", code)
	return endRespEvent(append(dst, '}'))
}
