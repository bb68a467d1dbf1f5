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
// dst[dataAt:dataEnd], its event name, the value of its last event line,
// dst[nameAt:nameEnd] (nameAt < 0: no event line). dataLines counts its
// data lines; its data, as a client's SSE parser reads it, is what data
// returns.
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
	// The lines after the first data line, each ending as readEvent cut
	// it (CRLF, LF or a lone CR; the event's own blank line last); the
	// first data line's value ends where its line ending starts.
	rest := dst[ev.dataEnd:]
	n, _ := lineLen(rest)
	rest = rest[n:]
	for len(rest) > 0 {
		n, _ := lineLen(rest)
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
// included), and locates it. It reads the stream as the SSE spec (and so
// the client's parser) does:
//
//   - a line ends with CRLF, a lone LF or a lone CR, in any mix; a CR that
//     is the last byte read so far ends its line at once, and an LF that
//     then comes first in the next read is the rest of that CRLF (appended
//     to that line, not a blank line);
//   - a line "data" without a colon is a data line with an empty value,
//     and an event may have several data lines (sseEvent.data joins them);
//   - every event line sets the event name, so the last one wins; a line
//     "event" without a colon sets it to "";
//   - a field's name is matched whole ("datax:", "events:" are other
//     fields, ignored).
//
// Events without a data line (comments such as ": keep-alive", or a lone
// "event:" line) are dropped. An event over MaxSSEEvent bytes is an
// oversizedEvent error in surface s's envelope; the end of the input
// before an event's blank line is io.EOF (the spec: an incomplete event is
// not dispatched); any other read error is returned as is. On an error dst
// comes back as it was.
//
// An event whose blank line is a CR that ends the bytes read so far is
// dispatched at once, as the client's parser does, when the line before
// ended with a lone CR too (a stream with CR line endings: no LF follows,
// and waiting for the next event's first byte would hold this one). After
// a line that ended with an LF the CR is rather the first half of a CRLF
// whose LF is on its way: readEvent waits for the next byte (as it always
// did for a CRLF) and keeps an LF in the event, so that the relayed event
// ends as the upstream's did. (A read error met there is left for the next
// call, which reads again.) An LF that follows such an event anyway is a
// blank line before the next one, dropped like any: it ends no event, and
// the client's parser ignores it.
func readEvent(dst []byte, r *bufio.Reader, s router.Surface) ([]byte, sseEvent, error) {
	ev := sseEvent{start: len(dst), dataAt: -1, dataEnd: -1, nameAt: -1, nameEnd: -1}
	// buf is what r holds, its first used bytes read into dst: lines are
	// cut from it, and r told once (Discard) when it is all used or the
	// event ends.
	var buf []byte
	used := 0
	for {
		lineStart := len(dst)
		for {
			if used == len(buf) {
				r.Discard(used) //nolint:errcheck // buffered
				var err error
				if buf, err = bufferedBytes(r); err != nil {
					return dst[:ev.start], ev, err
				}
				used = 0
			}
			b := buf[used:]
			if len(dst) == lineStart && b[0] == '\n' && lineStart > ev.start && dst[lineStart-1] == '\r' {
				// The LF of a CRLF split across two reads: the end of
				// the line before, not a line of its own.
				dst = append(dst, '\n')
				used++
				lineStart++
				continue
			}
			n, ended := lineLen(b)
			dst = append(dst, b[:n]...)
			used += n
			if len(dst)-ev.start > MaxSSEEvent {
				r.Discard(used) //nolint:errcheck // buffered
				return dst[:ev.start], ev, oversizedEvent(s)
			}
			if ended {
				break
			}
		}
		line := dst[lineStart:]
		if len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
			// Blank line: end of event.
			if ev.dataLines == 0 {
				dst = dst[:ev.start] // no data: drop it
				ev.nameAt, ev.nameEnd = -1, -1
				continue
			}
			r.Discard(used) //nolint:errcheck // buffered
			if line[0] == '\r' && len(line) == 1 && dst[lineStart-1] == '\n' && used == len(buf) {
				if b, err := r.Peek(1); err == nil && b[0] == '\n' {
					dst = append(dst, '\n')
					r.Discard(1) //nolint:errcheck // buffered
				}
			}
			return dst, ev, nil
		}
		if at, ok := dataField(line); ok {
			if ev.dataLines == 0 {
				ev.dataAt, ev.dataEnd = fieldValue(dst, lineStart+at)
			}
			ev.dataLines++
		} else if at, ok := eventField(line); ok {
			ev.nameAt, ev.nameEnd = fieldValue(dst, lineStart+at)
		}
	}
}

// bufferedBytes returns the bytes r holds, reading (and waiting) for more
// only when it holds none. They stay valid until r's next read.
func bufferedBytes(r *bufio.Reader) ([]byte, error) {
	if r.Buffered() == 0 {
		if _, err := r.Peek(1); err != nil {
			return nil, err
		}
	}
	return r.Peek(r.Buffered())
}

// lineLen returns the length of the first line in b, its line ending
// included: up to the first LF, CRLF or lone CR, the SSE spec's line
// endings. A CR that is b's last byte ends the line (the caller deals with
// an LF that comes after it). No line ending in b: len(b) and ended false.
// Two vectorized searches, the CR one only over the line the LF ends; b
// is not empty.
func lineLen(b []byte) (n int, ended bool) {
	// An event's blank line, without the searches.
	if b[0] == '\n' {
		return 1, true
	}
	if b[0] == '\r' && len(b) > 1 && b[1] == '\n' {
		return 2, true
	}
	lf := bytes.IndexByte(b, '\n')
	line := b
	if lf >= 0 {
		line = b[:lf]
	}
	if cr := bytes.IndexByte(line, '\r'); cr >= 0 && cr != lf-1 {
		return cr + 1, true // a lone CR
	}
	if lf >= 0 {
		return lf + 1, true
	}
	return len(b), false
}

// dataField reports whether line (with its line ending) is a data field,
// "data:" and its value or a bare "data", and where in line its value
// starts (before fieldValue cuts its leading space).
func dataField(line []byte) (at int, ok bool) { return field(line, sseDataField) }

// eventField is dataField for the event field: "event:" and its value or a
// bare "event" (an empty name).
func eventField(line []byte) (at int, ok bool) { return field(line, sseEventField) }

// field reports whether line (with its line ending, one line as lineLen
// cuts it) is the field named name, "name:" and its value or a bare
// "name", the whole name matched, and where in line its value starts.
func field(line, name []byte) (at int, ok bool) {
	if !bytes.HasPrefix(line, name) {
		return 0, false
	}
	if len(line) == len(name) {
		return len(name), true
	}
	switch line[len(name)] {
	case ':':
		return len(name) + 1, true
	case '\n', '\r':
		return len(name), true
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

// The names of the SSE fields the relaying decoders read.
var (
	sseDataField  = []byte("data")
	sseEventField = []byte("event")
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
