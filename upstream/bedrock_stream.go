package upstream

import (
	"bufio"
	"errors"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// NewStream returns a decoder of a ConverseStream answer
// (application/vnd.amazon.eventstream).
func (bedrockAdapter) NewStream(c *Call) StreamDecoder {
	cw := newChunkWriter(c)
	cw.id = newChatID()
	return &bedrockStream{cw: cw, dec: eventstream.NewDecoder()}
}

// bedrockStream translates ConverseStream events into
// chat.completion.chunk frames one event at a time. As for Anthropic, the
// role chunk of messageStart is held back until the first frame that
// carries content, so an exception before any content reaches the walk
// with no frame, before the commit, and fails over (SPEC §4.6). Not safe
// for concurrent use.
type bedrockStream struct {
	cw      chunkWriter
	dec     *eventstream.Decoder
	payload []byte // reused payload buffer
	tools   []int16
	ntool   int
	role    bool // messageStart seen, its role chunk not yet sent
	stopped bool // messageStop seen: the answer is complete
	done    bool
}

// Next implements StreamDecoder.
func (d *bedrockStream) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	if d.done {
		return dst, io.EOF
	}
	start := len(dst)
	for {
		msg, err := d.dec.Decode(r, d.payload[:0])
		if err != nil {
			if err == io.EOF && d.stopped {
				// metadata is optional after messageStop (which sent
				// the role chunk).
				d.done = true
				return append(dst, doneFrame...), io.EOF
			}
			var ce eventstream.ChecksumError
			var le eventstream.LengthError
			if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ce) || errors.As(err, &le) {
				return dst, truncatedStream()
			}
			return dst, err
		}
		if cap(msg.Payload) > cap(d.payload) {
			d.payload = msg.Payload[:0]
		}
		if dst, err = d.withRole(dst, start, &msg); err != nil || len(dst) > start {
			return dst, err
		}
	}
}

// withRole translates one message, preceded by the held role chunk when
// the message produces a frame. A failure drops everything appended since
// start (the role chunk is all there can be), so it reaches the walk with
// no frame; a message that produces nothing leaves the role held.
func (d *bedrockStream) withRole(dst []byte, start int, m *eventstream.Message) ([]byte, error) {
	if !d.role {
		return d.message(dst, m)
	}
	mark := len(dst)
	dst = d.cw.role(dst)
	held := len(dst)
	dst, err := d.message(dst, m)
	switch {
	case err != nil && err != io.EOF:
		return dst[:start], err
	case len(dst) == held && err == nil:
		return dst[:mark], nil
	}
	d.role = false
	return dst, err
}

func headerString(m *eventstream.Message, name string) string {
	if v, ok := m.Headers.Get(name).(eventstream.StringValue); ok {
		return string(v)
	}
	return ""
}

// message translates one event-stream message.
func (d *bedrockStream) message(dst []byte, m *eventstream.Message) ([]byte, error) {
	switch headerString(m, ":message-type") {
	case "event":
	case "exception":
		return dst, d.exception(headerString(m, ":exception-type"), m.Payload)
	case "error":
		return dst, d.exception(headerString(m, ":error-code"), []byte(`{"message":`+
			string(AppendJSONString(nil, headerString(m, ":error-message")))+`}`))
	default:
		return dst, nil
	}
	p := chatParsers.Get()
	defer chatParsers.Put(p)
	v, err := p.ParseBytes(m.Payload)
	if err != nil {
		return dst, &StreamError{Class: ClassTransport, Status: 502,
			Body: AppendError(nil, "malformed event in the upstream stream", TypeUpstream, CodeUpstreamError)}
	}
	switch headerString(m, ":event-type") {
	case "messageStart":
		// The role chunk leaves with the first frame that carries content.
		d.role = true
		return dst, nil
	case "contentBlockStart":
		tu := v.Get("start", "toolUse")
		idx := v.GetInt("contentBlockIndex")
		if tu == nil || idx < 0 || idx >= maxToolBlocks {
			return dst, nil
		}
		for len(d.tools) <= idx {
			d.tools = append(d.tools, -1)
		}
		d.tools[idx] = int16(d.ntool)
		d.ntool++
		id, _ := jsonStr(tu.Get("toolUseId"))
		name, _ := jsonStr(tu.Get("name"))
		return d.cw.toolStart(dst, int(d.tools[idx]), id, name), nil
	case "contentBlockDelta":
		delta := v.Get("delta")
		if s, ok := jsonStr(delta.Get("text")); ok {
			if s != "" {
				return d.cw.text(dst, s), nil
			}
			return dst, nil
		}
		idx := v.GetInt("contentBlockIndex")
		s, _ := jsonStr(delta.Get("toolUse", "input"))
		if s != "" && idx >= 0 && idx < len(d.tools) && d.tools[idx] >= 0 {
			return d.cw.toolArgs(dst, int(d.tools[idx]), s), nil
		}
	case "messageStop":
		d.stopped = true
		stop, _ := jsonStr(v.Get("stopReason"))
		return d.cw.finish(dst, finishReason(stop)), nil
	case "metadata":
		dst = d.cw.usage(dst, bedrockUsage(v.Get("usage")))
		d.done = true
		return append(dst, doneFrame...), io.EOF
	}
	// contentBlockStop, reasoning deltas and unknown events produce nothing.
	return dst, nil
}

// bedrockStreamStatus is the HTTP status of each ConverseStream exception.
func bedrockStreamStatus(typ string) int {
	switch typ {
	case "throttlingException":
		return 429
	case "validationException":
		return 400
	case "accessDeniedException":
		return 403
	case "resourceNotFoundException":
		return 404
	case "modelTimeoutException":
		return 408
	case "modelStreamErrorException", "modelErrorException":
		return 424
	case "serviceUnavailableException":
		return 503
	}
	return 500 // internalServerException and unknown exceptions
}

func (d *bedrockStream) exception(typ string, payload []byte) *StreamError {
	p := chatParsers.Get()
	defer chatParsers.Put(p)
	msg := ""
	if v, err := p.ParseBytes(payload); err == nil {
		if msg, _ = jsonStr(v.Get("message")); msg == "" {
			msg, _ = jsonStr(v.Get("Message"))
		}
	}
	if msg == "" {
		msg = "bedrock stream exception " + typ
	}
	status := bedrockStreamStatus(typ)
	cl := bedrockClass(status, typ, msg)
	return &StreamError{Class: cl, Status: status, Body: classEnvelope(cl, msg)}
}
