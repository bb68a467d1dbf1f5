package translate

import (
	"errors"
	"strconv"
	"sync"

	"github.com/valyala/fastjson"
)

// NewMessagesStream returns the Stream that turns a chat completion stream
// into the Messages API's events for the client's model id: message_start
// at the first chunk, one content block at a time (text_delta for text,
// input_json_delta for a tool call's arguments, one tool_use block per
// tool call index), then message_delta with the stop reason and the usage
// of the last chunk (stream_options.include_usage) and message_stop at the
// chat stream's [DONE].
func NewMessagesStream(model []byte) Stream {
	s := msgStreams.Get().(*messagesStream)
	s.model = append(s.model, model...)
	return s
}

// msgStreams holds released Messages streams, their buffers kept.
var msgStreams = sync.Pool{New: func() any { return &messagesStream{open: -1, openTool: -1} }}

// Release implements Stream.
func (s *messagesStream) Release() {
	s.reset()
	msgStreams.Put(s)
}

// reset returns s to the state of a new stream, for no model yet, keeping
// its buffers.
func (s *messagesStream) reset() {
	*s = messagesStream{model: keepBuf(s.model), closed: s.closed[:0], toolID: keepBuf(s.toolID), open: -1, openTool: -1}
}

// messagesStream holds what the next event needs: whether the message has
// started, the open content block, the block of each tool call index, the
// shape of the open tool call's arguments so far, the stop reason and the
// last usage. Not safe for concurrent use.
type messagesStream struct {
	model []byte
	// blocks counts the content blocks started; open is the index of the
	// open one (-1 none) and openTool its tool call index (-1: a text
	// block).
	blocks, open, openTool int
	// closed marks the tool call indexes whose block has ended.
	closed []bool
	// toolID is the open tool call's id, for servers that send no index.
	toolID []byte
	args   argsShape
	stop   string
	usage  chatUsage
	// started: message_start written; ended: message_stop written.
	started, ended bool
}

// maxToolCalls bounds the tool call index table.
const maxToolCalls = 1024

var (
	errChunk       = errors.New("malformed chunk in the upstream's chat stream")
	errEmptyStream = errors.New("the upstream's chat stream ended without a chunk")
	errLateArgs    = errors.New("the upstream's chat stream sent arguments for a tool call it had already ended")
	errToolIndex   = errors.New("the upstream's chat stream sent a tool call index out of range")
	errNoToolName  = errors.New("the upstream's chat stream started a tool call without a function name")
	errStreamEnded = errors.New("the upstream's chat stream went on after its end")
	errArgsNotJSON = errors.New("the upstream's tool call arguments are not a JSON object")
)

// Chunk implements Stream.
func (s *messagesStream) Chunk(dst, data []byte) ([]byte, error) {
	if s.ended {
		return dst, errStreamEnded
	}
	p := msgParsers.Get()
	defer msgParsers.Put(p)
	v, err := p.ParseBytes(data)
	top := v.GetObject()
	if err != nil || top == nil {
		return dst, errChunk
	}
	var ch chatChunk
	ch.read(top)
	id, choices, usage := ch.id, ch.choices, ch.usage
	if !s.started {
		s.started = true
		dst = s.messageStart(dst, id)
	}
	if usage.GetObject() != nil {
		s.usage = readUsage(usage)
	}
	list := choices.GetArray()
	if len(list) == 0 {
		return dst, nil // a usage chunk, or a keep-alive
	}
	var c chatChoice
	c.read(list[0].GetObject())
	var d chatDelta
	d.read(c.delta.GetObject())
	content, refusal, calls, finish := d.content, d.refusal, d.calls, c.finish
	if dst, err = s.text(dst, content); err != nil {
		return dst, err
	}
	if dst, err = s.text(dst, refusal); err != nil {
		return dst, err
	}
	for _, tc := range calls.GetArray() {
		if dst, err = s.toolCall(dst, tc); err != nil {
			return dst, err
		}
	}
	if fr, ok := str(finish); ok && len(fr) > 0 {
		s.stop = stopReason(fr)
		return s.closeBlock(dst)
	}
	return dst, nil
}

// Done implements Stream: the open block closed, message_delta with the
// stop reason and usage, message_stop.
func (s *messagesStream) Done(dst []byte) ([]byte, error) {
	if !s.started {
		return dst, errEmptyStream
	}
	if s.ended {
		return dst, nil
	}
	dst, err := s.closeBlock(dst)
	if err != nil {
		return dst, err
	}
	s.ended = true
	if s.stop == "" {
		s.stop = "end_turn"
	}
	dst = append(dst, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
	dst = append(dst, s.stop...)
	dst = append(dst, `","stop_sequence":null},"usage":`...)
	dst = appendUsage(dst, s.usage)
	dst = append(dst, "}\n\n"...)
	return append(dst, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...), nil
}

// Fail implements Stream: Anthropic's error event, its type from status.
func (s *messagesStream) Fail(dst []byte, status int, _, _, message string) []byte {
	s.ended = true
	dst = append(dst, "event: error\ndata: "...)
	dst = appendAnthropicError(dst, status, message)
	return append(dst, "\n\n"...)
}

// messageStart writes message_start; the usage is unknown until the end.
func (s *messagesStream) messageStart(dst []byte, id *fastjson.Value) []byte {
	dst = append(dst, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
	dst = appendMessageID(dst, id)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = appendString(dst, s.model)
	return append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`+"\n\n"...)
}

// text writes a text delta for the string v (nothing for an absent or
// empty one), opening a text block when none is open.
func (s *messagesStream) text(dst []byte, v *fastjson.Value) ([]byte, error) {
	// Probe: an empty string (a role chunk's content) opens no block.
	switch probe, k := appendStringOrNull(dst, v); {
	case k == rawNull || k == rawString && len(probe)-len(dst) == 2:
		return dst, nil
	case k == rawOther:
		return dst, errChunk
	}
	var err error
	if s.open < 0 || s.openTool >= 0 {
		if dst, err = s.closeBlock(dst); err != nil {
			return dst, err
		}
		dst = s.startBlock(dst, -1)
		dst = append(dst, `{"type":"text","text":""}}`+"\n\n"...)
	}
	dst = s.delta(dst)
	dst = append(dst, `{"type":"text_delta","text":`...)
	dst, _ = appendRawString(dst, v)
	return append(dst, "}}\n\n"...), nil
}

// toolCall writes one tool call delta: a tool_use block started for a new
// call, and its arguments fragment as an input_json_delta. A call is known
// by its index; a chunk without one (some servers) continues the open call
// unless it brings a new id, and a new id at the open call's index (some
// servers number every call 0) starts a new call.
func (s *messagesStream) toolCall(dst []byte, tc *fastjson.Value) ([]byte, error) {
	if tc.GetObject() == nil {
		return dst, errChunk
	}
	idx := -1
	if iv := tc.Get("index"); isNumber(iv) {
		if idx = iv.GetInt(); idx < 0 || idx >= maxToolCalls {
			return dst, errToolIndex
		}
	}
	id, _ := str(tc.Get("id"))
	sameID := len(id) == 0 || len(s.toolID) == 0 || string(id) == string(s.toolID)
	open := s.open >= 0 && s.openTool >= 0
	if idx < 0 {
		switch {
		case open && sameID:
			idx = s.openTool
		case len(id) > 0:
			if idx = len(s.closed); idx >= maxToolCalls {
				return dst, errToolIndex
			}
		default:
			return dst, errChunk
		}
	}
	for len(s.closed) <= idx {
		s.closed = append(s.closed, false)
	}
	var err error
	if !open || idx != s.openTool || !sameID {
		if s.closed[idx] && len(id) == 0 {
			return dst, errLateArgs
		}
		if dst, err = s.closeBlock(dst); err != nil {
			return dst, err
		}
		if dst, err = s.startTool(dst, idx, tc, id); err != nil {
			return dst, err
		}
	}
	args := tc.Get("function", "arguments")
	mark := len(dst)
	dst = s.delta(dst)
	dst = append(dst, `{"type":"input_json_delta","partial_json":`...)
	at := len(dst)
	dst, k := appendStringOrNull(dst, args)
	switch {
	case k == rawOther:
		return dst[:mark], errChunk
	case k == rawNull || len(dst)-at == 2:
		return dst[:mark], nil
	}
	frag, _ := str(args) // read only now: its raw token is written
	if !s.args.feed(frag) {
		return dst[:mark], errArgsNotJSON
	}
	return append(dst, "}}\n\n"...), nil
}

// startTool starts the tool_use block of tool call idx.
func (s *messagesStream) startTool(dst []byte, idx int, tc *fastjson.Value, id []byte) ([]byte, error) {
	mark, blocks := len(dst), s.blocks
	dst = s.startBlock(dst, idx)
	dst = append(dst, `{"type":"tool_use","id":`...)
	if len(id) > 0 {
		dst = appendString(dst, id)
	} else {
		// A server that sends no id: one the client can answer with.
		dst = append(dst, `"toolu_`...)
		dst = strconv.AppendInt(dst, int64(idx), 10)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"name":`...)
	dst, ok := appendRawString(dst, tc.Get("function", "name"))
	if !ok {
		s.blocks, s.open, s.openTool = blocks, -1, -1
		return dst[:mark], errNoToolName
	}
	s.toolID = append(s.toolID[:0], id...)
	s.args = argsShape{}
	return append(dst, `,"input":{}}}`+"\n\n"...), nil
}

// startBlock writes the head of content_block_start for a new block (tool
// call index tool, -1 for text), up to its content_block value.
func (s *messagesStream) startBlock(dst []byte, tool int) []byte {
	s.open, s.openTool = s.blocks, tool
	s.blocks++
	dst = append(dst, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
	dst = strconv.AppendInt(dst, int64(s.open), 10)
	return append(dst, `,"content_block":`...)
}

// delta writes the head of a content_block_delta of the open block, up to
// its delta value.
func (s *messagesStream) delta(dst []byte) []byte {
	dst = append(dst, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	dst = strconv.AppendInt(dst, int64(s.open), 10)
	return append(dst, `,"delta":`...)
}

// closeBlock ends the open block, if any. A tool call whose arguments are
// not a whole JSON object (cut short, or not JSON) fails the stream.
func (s *messagesStream) closeBlock(dst []byte) ([]byte, error) {
	if s.open < 0 {
		return dst, nil
	}
	if s.openTool >= 0 {
		if !s.args.complete() {
			return dst, errArgsNotJSON
		}
		s.closed[s.openTool] = true
	}
	dst = append(dst, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	dst = strconv.AppendInt(dst, int64(s.open), 10)
	s.open, s.openTool = -1, -1
	return append(dst, "}\n\n"...), nil
}
