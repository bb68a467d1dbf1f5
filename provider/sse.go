package provider

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"sync"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/router"
)

// SSEDecoder relays an OpenAI-compatible SSE stream event by event, byte
// for byte (line endings included). Events without a data line (comments
// such as ": keep-alive", or a lone "event:" line) are dropped: they carry
// nothing for the client and, before the commit, must not count as the
// stream's first byte. A read error other than a clean EOF (a deadline, a
// reset connection) is returned as is, so the walk can tell a timeout from a
// transport failure.
type SSEDecoder struct {
	// usage is the last usage a chunk carried (an OpenAI final usage chunk,
	// sent when the client asked stream_options.include_usage; vLLM's
	// continuous usage stats put the running total in every chunk).
	usage Usage
	// scratch holds the data of an event with several data lines, joined.
	scratch []byte
}

// Usage implements UsageReporter.
func (d *SSEDecoder) Usage() Usage { return d.usage }

// ssePool keeps pass-through decoders between streams: the most common
// stream would otherwise cost an allocation each.
var ssePool = sync.Pool{New: func() any { return new(SSEDecoder) }}

// release implements pooledDecoder.
func (d *SSEDecoder) release() { ssePool.Put(d) }

// pooledDecoder is a StreamDecoder that goes back to its pool once its
// stream has ended.
type pooledDecoder interface{ release() }

// ReleaseDecoder pools d if it is pooled; d must not be used again.
func ReleaseDecoder(d StreamDecoder) {
	if p, ok := d.(pooledDecoder); ok {
		p.release()
	}
}

// doneData is the data of OpenAI's terminal stream event, and doneFrame
// that event as the gateway writes it.
const (
	doneData  = "[DONE]"
	doneFrame = "data: " + doneData + "\n\n"
)

// MaxSSEEvent bounds one upstream SSE event (all its lines). OpenAI-style
// chunks are a few hundred bytes; without a bound, an upstream sending bytes
// with no blank line (or no newline at all) would grow one frame buffer
// until the process runs out of memory.
const MaxSSEEvent = 8 << 20

// oversizedEvent is the error of an upstream stream event (an SSE event, an
// Anthropic event, a Bedrock frame) over MaxSSEEvent bytes, in surface s's
// envelope: a transport failure, failover-safe before the commit and an
// error frame after it.
func oversizedEvent(s router.Surface) *StreamError {
	return &StreamError{Class: ClassTransport, Status: 502,
		Body: AppendSurfaceError(nil, s, 502, "upstream stream event exceeds "+strconv.Itoa(MaxSSEEvent)+" bytes",
			TypeUpstream, CodeUpstreamError)}
}

// Next implements StreamDecoder.
func (d *SSEDecoder) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	dst, ev, err := readEvent(dst, r, router.SurfaceChat)
	if err != nil {
		if err == io.EOF {
			return dst, &StreamError{Class: ClassTransport, Status: 502,
				Body: AppendError(nil, "upstream stream ended before [DONE]", TypeUpstream, CodeUpstreamError)}
		}
		return dst, err
	}
	// The data as the client's SSE parser reads it (several data lines
	// joined), so that the gateway and the client see the same event.
	payload := ev.data(dst, &d.scratch)
	if bytes.HasPrefix(payload, byteconv.Bytes(doneData)) && len(bytes.TrimSpace(payload)) == len(doneData) {
		return append(dst[:ev.start], doneFrame...), io.EOF
	}
	if se := errorEvent(payload); se != nil {
		return dst[:ev.start], se
	}
	// Cheap for an ordinary chunk: one vectorized search for "usage"; a
	// chunk with one reads just that object.
	if u, ok := ReadUsage(payload); ok {
		d.usage = u
	}
	return dst, nil
}

// sseEvent locates one SSE event that readEvent appended to dst: the event
// (all its lines) is dst[start:], the value of its first data line
// dst[dataAt:dataEnd], its event name dst[nameAt:nameEnd] (nameAt < 0:
// none). dataLines counts its data lines; its data, as a client's SSE
// parser reads it, is what data returns.
type sseEvent struct {
	start, dataAt, dataEnd, nameAt, nameEnd int
	dataLines                               int
}

// data returns the event's data, the values of its data lines joined by
// "\n", as the SSE spec (and so the client's parser) reads it. An event
// with one data line (the common case) is read in place, dst[dataAt:
// dataEnd], without a copy; several lines are joined into *scratch (grown
// as needed and kept for the next event; nil scratch: a new buffer). dst
// is the buffer readEvent filled; the result is valid until either
// changes.
func (ev *sseEvent) data(dst []byte, scratch *[]byte) []byte {
	if ev.dataLines <= 1 {
		return dst[ev.dataAt:ev.dataEnd]
	}
	var buf []byte
	if scratch != nil {
		buf = (*scratch)[:0]
	}
	buf = append(buf, dst[ev.dataAt:ev.dataEnd]...)
	// The lines after the first data line; each ends with '\n' (the
	// event's own blank line last).
	rest := dst[ev.dataEnd:]
	rest = rest[bytes.IndexByte(rest, '\n')+1:]
	for len(rest) > 0 {
		n := bytes.IndexByte(rest, '\n') + 1
		if n == 0 {
			n = len(rest)
		}
		line := rest[:n]
		rest = rest[n:]
		if at, ok := dataField(line); ok {
			at, end := fieldValue(line, at)
			buf = append(buf, '\n')
			buf = append(buf, line[at:end]...)
		}
	}
	if scratch != nil {
		*scratch = buf
	}
	return buf
}

// readEvent is the one SSE reader of the stream decoders: it appends the
// next event that has a data line to dst, byte for byte (line endings
// included), and locates it. The data field follows the SSE spec: a line
// "data" without a colon is a data line with an empty value, and an event
// may have several data lines (sseEvent.data joins them). Events without
// a data line (comments such as ": keep-alive", or a lone "event:" line)
// are dropped. An event over MaxSSEEvent bytes is an oversizedEvent error
// in surface s's envelope; the end of the input before an event's blank
// line is io.EOF (the spec: an incomplete event is not dispatched); any
// other read error is returned as is. On an error dst comes back as it
// was.
func readEvent(dst []byte, r *bufio.Reader, s router.Surface) ([]byte, sseEvent, error) {
	ev := sseEvent{start: len(dst), dataAt: -1, dataEnd: -1, nameAt: -1, nameEnd: -1}
	for {
		lineStart := len(dst)
		var err error
		for {
			var chunk []byte
			chunk, err = r.ReadSlice('\n')
			dst = append(dst, chunk...)
			if len(dst)-ev.start > MaxSSEEvent {
				return dst[:ev.start], ev, oversizedEvent(s)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil {
			return dst[:ev.start], ev, err
		}
		line := dst[lineStart:]
		if len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
			// Blank line: end of event.
			if ev.dataLines == 0 {
				dst = dst[:ev.start] // no data: drop it
				ev.nameAt, ev.nameEnd = -1, -1
				continue
			}
			return dst, ev, nil
		}
		if at, ok := dataField(line); ok {
			if ev.dataLines == 0 {
				ev.dataAt, ev.dataEnd = fieldValue(dst, lineStart+at)
			}
			ev.dataLines++
		} else if ev.nameAt < 0 && bytes.HasPrefix(line, sseEventField) {
			ev.nameAt, ev.nameEnd = fieldValue(dst, lineStart+len(sseEventField))
		}
	}
}

// dataField reports whether line (with its line ending) is a data field,
// "data:" and its value or a bare "data", and where in line its value
// starts (before fieldValue cuts its leading space).
func dataField(line []byte) (at int, ok bool) {
	if bytes.HasPrefix(line, sseDataField) {
		return len(sseDataField), true
	}
	name := sseDataField[:len(sseDataField)-1]
	if bytes.HasPrefix(line, name) {
		rest := line[len(name):]
		if len(rest) == 0 || rest[0] == '\n' || (rest[0] == '\r' && (len(rest) == 1 || rest[1] == '\n')) {
			return len(name), true
		}
	}
	return 0, false
}

// fieldValue returns the value of the field whose line, the last in dst,
// has its value at dst[at:]: one leading space and the line ending cut.
func fieldValue(dst []byte, at int) (start, end int) {
	if at < len(dst) && dst[at] == ' ' {
		at++
	}
	end = len(dst)
	for end > at && (dst[end-1] == '\n' || dst[end-1] == '\r') {
		end--
	}
	return at, end
}

// The SSE fields the relaying decoders read.
var (
	sseDataField  = []byte("data:")
	sseEventField = []byte("event:")
)

// errorEvent returns the StreamError of an SSE data payload that is an
// error object ({"error":...}), or nil.
func errorEvent(payload []byte) *StreamError {
	t := bytes.TrimLeft(payload, " \t")
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(`"error"`)) {
		return nil // fast path: an ordinary chunk
	}
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(t)
	if err != nil {
		return nil
	}
	e := v.Get("error")
	if e == nil || e.Type() == fastjson.TypeNull {
		return nil
	}
	status, class := 500, ClassServer
	var code []byte
	if e.Type() == fastjson.TypeObject {
		if c := e.Get("code"); c != nil {
			switch c.Type() {
			case fastjson.TypeNumber:
				if n := c.GetInt(); n >= 400 && n <= 599 {
					status = n
					class = classifyStatus(n)
				}
			case fastjson.TypeString:
				code = c.GetStringBytes()
				if n, err := strconv.Atoi(string(code)); err == nil && n >= 400 && n <= 599 {
					status = n
					class = classifyStatus(n)
				}
			}
		}
	}
	switch string(code) {
	case "context_length_exceeded":
		status, class = 400, ClassContextLength
	case "rate_limit_exceeded":
		status, class = 429, ClassRateLimited
	}
	var body []byte
	if e.Type() == fastjson.TypeObject {
		body = append(body, t...)
	} else {
		msg := "upstream stream error"
		if e.Type() == fastjson.TypeString {
			msg = string(e.GetStringBytes())
		}
		body = AppendError(nil, msg, TypeUpstream, CodeUpstreamError)
	}
	return &StreamError{Class: class, Status: status, Body: body}
}
