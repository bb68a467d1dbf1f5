package provider

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/switchyard/switchyard/router"
)

// NewStream returns a decoder of a ConverseStream answer
// (application/vnd.amazon.eventstream).
func (bedrockAdapter) NewStream(c *Call) StreamDecoder {
	cw := newChunkWriter(c)
	cw.id = newChatID()
	return &bedrockStream{chatStream: chatStream{cw: cw}, dec: eventstream.NewDecoder()}
}

// bedrockStream translates ConverseStream events into
// chat.completion.chunk frames one event at a time, holding back the role
// chunk of messageStart as for Anthropic. Not safe for concurrent use.
type bedrockStream struct {
	chatStream
	dec     *eventstream.Decoder
	payload []byte // reused payload buffer
	stopped bool   // messageStop seen: the answer is complete
}

// Next implements StreamDecoder.
func (d *bedrockStream) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	if d.done {
		return dst, io.EOF
	}
	start := len(dst)
	for {
		err := checkPrelude(r, router.SurfaceChat)
		var msg eventstream.Message
		if err == nil {
			msg, err = d.dec.Decode(r, d.payload[:0])
		}
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
		dst, err = d.withRole(dst, start, func(dst []byte) ([]byte, error) { return d.message(dst, &msg) })
		if err != nil || len(dst) > start {
			return dst, err
		}
	}
}

// Event-stream framing: a 12-byte prelude (total length, headers length,
// CRC-32 of those 8 bytes), the headers, the payload, a 4-byte message CRC.
const (
	eventPreludeLen = 12
	eventMinLen     = eventPreludeLen + 4
)

// checkPrelude peeks at the prelude of the next event-stream frame and
// refuses a frame the decoder must not be handed: eventstream.Decoder
// trusts the 32-bit total length (up to 4 GiB) and checks the message CRC
// only after reading the whole frame, and a headers length over the total
// wraps its payload length to about 4 GiB. A frame over MaxSSEEvent bytes
// (Bedrock's are a few hundred) is an oversizedEvent error; an
// inconsistent prelude (lengths that cannot hold, a bad prelude CRC) is a
// malformed-event error. Both are transport failures in surface s's
// envelope and neither consumes any input. A short read is io.EOF before
// any byte of the frame, io.ErrUnexpectedEOF after some, or the reader's
// error as is.
func checkPrelude(r *bufio.Reader, s router.Surface) error {
	p, err := r.Peek(eventPreludeLen)
	if err != nil {
		if err == io.EOF && len(p) > 0 {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	total := binary.BigEndian.Uint32(p[0:4])
	headers := binary.BigEndian.Uint32(p[4:8])
	if crc32.ChecksumIEEE(p[:8]) != binary.BigEndian.Uint32(p[8:12]) ||
		total < eventMinLen || headers > total-eventMinLen {
		return &StreamError{Class: ClassTransport, Status: 502,
			Body: AppendSurfaceError(nil, s, 502, "malformed event in the upstream stream", TypeUpstream, CodeUpstreamError)}
	}
	if total > MaxSSEEvent {
		return oversizedEvent(s)
	}
	return nil
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
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(m.Payload)
	if err != nil {
		return dst, malformedEvent()
	}
	switch headerString(m, ":event-type") {
	case "messageStart":
		// The role chunk leaves with the first frame that carries content.
		d.role = true
		return dst, nil
	case "contentBlockStart":
		tu := v.Get("start", "toolUse")
		if tu == nil {
			return dst, nil
		}
		id, _ := jsonStr(tu.Get("toolUseId"))
		name, _ := jsonStr(tu.Get("name"))
		return d.toolStart(dst, v.GetInt("contentBlockIndex"), id, name), nil
	case "contentBlockDelta":
		delta := v.Get("delta")
		if s, ok := jsonStr(delta.Get("text")); ok {
			if s != "" {
				return d.cw.text(dst, s), nil
			}
			return dst, nil
		}
		s, _ := jsonStr(delta.Get("toolUse", "input"))
		return d.toolArgs(dst, v.GetInt("contentBlockIndex"), s), nil
	case "messageStop":
		d.stopped = true
		stop, _ := jsonStr(v.Get("stopReason"))
		return d.cw.finish(dst, finishReason(stop)), nil
	case "metadata":
		dst = d.cw.usage(dst, parsedUsage(v.Get("usage")))
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
	p := parserPool.Get()
	defer parserPool.Put(p)
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
