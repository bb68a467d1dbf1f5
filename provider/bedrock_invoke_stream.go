package provider

import (
	"bufio"
	"encoding/base64"
	"errors"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/router"
)

// invokeStream relays an InvokeModelWithResponseStream answer to a Messages
// client (docs/providers.md, Claude Code on Bedrock). Each event-stream
// frame with :event-type chunk carries one Anthropic event, base64 in
// {"bytes":"…"}; it leaves as "event: <its type>\ndata: <its JSON>\n\n",
// the JSON as Bedrock sent it. Frames are read by the ConverseStream
// decoder's reader (checkPrelude, then eventstream.Decoder): bounded, CRCs
// checked. As the native relay does, message_start and pings after it are
// held back and leave with the next event, message_stop ends the stream
// and an error event is the upstream's own failure. An exception frame is
// a failure classified by its :exception-type (a Bedrock-made error, so the
// relay frames it as Anthropic's error event after the commit). Other
// event types and message types are skipped, as the AWS SDKs skip union
// members they do not know. Usage is noted as on the native relay. Not
// safe for concurrent use.
type invokeStream struct {
	dec     eventstream.Decoder
	payload []byte // the frame payload buffer, reused
	chunk   []byte // the decoded event, reused
	data    []byte // the event re-encoded on one line, when it had line breaks
	name    []byte // the event's type
	src     readRecorder
	usage   eventUsage
	done    bool // message_stop relayed
}

// readRecorder reads from r and keeps its first failure other than io.EOF,
// so that a frame the decoder cannot read is told from a connection that
// failed under it.
type readRecorder struct {
	r   *bufio.Reader
	err error
}

func (rr *readRecorder) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if err != nil && err != io.EOF && rr.err == nil {
		rr.err = err
	}
	return n, err
}

func newInvokeStream() *invokeStream { return &invokeStream{} }

// maxEventName bounds an event type; Anthropic's are a few words.
const maxEventName = 64

// maxHeld bounds the events held back after message_start (a variable for
// the test that proves the bound).
var maxHeld = MaxSSEEvent

// Next implements StreamDecoder.
func (d *invokeStream) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	if d.done {
		return dst, io.EOF
	}
	start := len(dst)
	held := false
	for {
		name, data, err := d.read(r)
		if err != nil {
			return dst[:start], err
		}
		d.usage.note(router.SurfaceMessages, name, data)
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, "\ndata: "...)
		dst = append(dst, data...)
		dst = append(dst, "\n\n"...)
		if dst, err = messagesEvents.event(dst, name, data); err != nil {
			d.done = err == io.EOF
			return dst, err
		}
		// What is held is bounded: an upstream sending pings without end
		// after message_start gets them relayed.
		if held = messagesEvents.opening(name, held); !held || len(dst)-start > maxHeld {
			return dst, nil
		}
	}
}

// Usage implements UsageReporter.
func (d *invokeStream) Usage() Usage { return d.usage.u }

// read returns the next Anthropic event's type and JSON (views of d's
// buffers, valid until the next read), skipping frames that carry none.
func (d *invokeStream) read(r *bufio.Reader) (name, data []byte, err error) {
	for {
		m, err := d.frame(r)
		if err != nil {
			return nil, nil, err
		}
		switch headerString(&m, ":message-type") {
		case "event":
			if headerString(&m, ":event-type") == "chunk" {
				return d.chunkEvent(m.Payload)
			}
		case "exception":
			return nil, nil, invokeException(headerString(&m, ":exception-type"), exceptionMessage(m.Payload))
		case "error":
			return nil, nil, invokeException(headerString(&m, ":error-code"), headerString(&m, ":error-message"))
		}
	}
}

// frame reads one event-stream frame.
func (d *invokeStream) frame(r *bufio.Reader) (eventstream.Message, error) {
	var m eventstream.Message
	switch err := checkPrelude(r, router.SurfaceMessages); {
	case err == io.EOF:
		return m, invokeTransport("upstream stream ended before its last event")
	case err == io.ErrUnexpectedEOF:
		return m, invokeTransport("upstream stream ended inside an event-stream frame")
	case err != nil:
		return m, err // checkPrelude's refusal, or the connection's failure
	}
	d.src = readRecorder{r: r}
	m, err := d.dec.Decode(&d.src, d.payload[:0])
	d.src.r = nil
	if err != nil {
		return m, d.decodeError(err)
	}
	if cap(m.Payload) > cap(d.payload) {
		d.payload = m.Payload[:0]
	}
	return m, nil
}

// decodeError turns a failure to decode a frame whose prelude was sound
// into a transport failure in Anthropic's envelope: the stream ended inside
// it, it failed its CRC, or its headers are malformed. The connection's
// own failure (a timeout, a reset) is returned as it is, for the walk to
// classify.
func (d *invokeStream) decodeError(err error) error {
	var ce eventstream.ChecksumError
	switch {
	case d.src.err != nil:
		return d.src.err
	case errors.As(err, &ce):
		return invokeTransport("upstream event-stream frame failed its CRC check")
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return invokeTransport("upstream stream ended inside an event-stream frame")
	}
	return invokeTransport("malformed event-stream frame in the upstream stream")
}

// invokeTransport is a transport failure of the stream in Anthropic's
// envelope: failover-safe before the commit, an error event after it.
func invokeTransport(msg string) *StreamError {
	return &StreamError{Class: ClassTransport, Status: 502,
		Body: AppendAnthropicError(nil, AnthropicErrorType(502), msg)}
}

// malformedChunk refuses a chunk frame whose event cannot be relayed.
func malformedChunk(what string) *StreamError {
	return invokeTransport("malformed chunk in the upstream stream: " + what)
}

// chunkEvent decodes a chunk frame's payload, {"bytes":"<base64>"}, and
// returns the event's type and its JSON on one line.
func (d *invokeStream) chunkEvent(payload []byte) (name, data []byte, err error) {
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(payload)
	if err != nil {
		return nil, nil, malformedChunk("its payload is not JSON")
	}
	b := v.Get("bytes")
	if b == nil || b.Type() != fastjson.TypeString {
		return nil, nil, malformedChunk("its payload has no bytes string")
	}
	src, _ := b.StringBytes()
	n := base64.StdEncoding.DecodedLen(len(src))
	if cap(d.chunk) < n {
		d.chunk = make([]byte, n)
	}
	n, err = base64.StdEncoding.Decode(d.chunk[:n], src)
	if err != nil {
		return nil, nil, malformedChunk("its bytes are not base64")
	}
	ev := d.chunk[:n]
	// src is not needed any more: the parser may parse the event.
	e, err := p.ParseBytes(ev)
	if err != nil || e.Type() != fastjson.TypeObject {
		return nil, nil, malformedChunk("its event is not a JSON object")
	}
	o, _ := e.Object()
	types := 0
	o.Visit(func(k []byte, t *fastjson.Value) {
		if string(k) == "type" {
			types++
			if s, ok := jsonStr(t); ok {
				d.name = append(d.name[:0], s...)
			}
		}
	})
	// One string type, as every JSON parser reads it, fit for an event line.
	if types != 1 || e.Get("type").Type() != fastjson.TypeString || !eventName(d.name) {
		return nil, nil, malformedChunk("its event has no single, plain type")
	}
	if !hasLineBreak(ev) {
		return d.name, ev, nil
	}
	// Slow path: JSON with line breaks between tokens would split the SSE
	// data line; re-encoded on one line (strings escaped anew).
	d.data = appendJSONValue(d.data[:0], e)
	return d.name, d.data, nil
}

// eventName reports whether b can be an SSE event name: 1 to maxEventName
// ASCII letters, digits, '_', '.' or '-'.
func eventName(b []byte) bool {
	if len(b) == 0 || len(b) > maxEventName {
		return false
	}
	for _, c := range b {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func hasLineBreak(b []byte) bool {
	for _, c := range b {
		if c == '\n' || c == '\r' {
			return true
		}
	}
	return false
}

// exceptionMessage reads an exception frame's {"message":…} payload.
func exceptionMessage(payload []byte) string {
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(payload)
	if err != nil {
		return ""
	}
	msg, _ := jsonStr(v.Get("message"))
	if msg == "" {
		msg, _ = jsonStr(v.Get("Message"))
	}
	return string(append([]byte(nil), msg...)) // the parser goes back to its pool
}

// invokeStreamStatus is the HTTP status standing for a stream exception:
// throttling a 429, a refused request its 4xx, a service or model failure a
// 5xx (unknown exceptions too).
func invokeStreamStatus(typ string) int {
	switch typ {
	case "throttlingException":
		return 429
	case "validationException":
		return 400
	case "accessDeniedException":
		return 403
	case "resourceNotFoundException":
		return 404
	case "serviceUnavailableException", "modelNotReadyException":
		return 503
	case "modelTimeoutException":
		return 504
	case "modelStreamErrorException", "modelErrorException":
		return 502
	}
	return 500 // internalServerException and exceptions not known
}

// invokeException is the failure an exception frame reports: classified as
// the same exception over HTTP would be, in Anthropic's envelope, not
// framed (the relay writes the error event after the commit).
func invokeException(typ, msg string) *StreamError {
	if msg == "" {
		msg = "bedrock stream exception " + typ
	}
	status := invokeStreamStatus(typ)
	return &StreamError{Class: bedrockMessagesClass(status, typ, msg), Status: status,
		Body: AppendAnthropicError(nil, AnthropicErrorType(status), msg)}
}
