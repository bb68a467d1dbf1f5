package provider

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/switchyard/switchyard/router"
)

// readEvent reads the data field as the SSE spec does (and so as the
// client's parser does): several data lines are joined with "\n", a bare
// "data" line is a data line with an empty value, the event is kept byte
// for byte; an event the input ends in is not dispatched.
func TestReadEventDataField(t *testing.T) {
	cases := []struct {
		name, in, data, eventName string
	}{
		{"one line", "data: {\"a\":1}\n\n", `{"a":1}`, ""},
		{"no space", "data:{\"a\":1}\n\n", `{"a":1}`, ""},
		{"two lines", "data: {\"a\":\ndata: 1}\n\n", "{\"a\":\n1}", ""},
		{"crlf lines", "event: x\r\ndata: a\r\ndata:  b\r\n\r\n", "a\n b", "x"},
		{"lines around other fields", "data: a\nevent: e\n: comment\nid: 7\ndata: b\nretry: 1\ndata: c\n\n", "a\nb\nc", "e"},
		{"bare data line", "data\n\n", "", ""},
		{"bare data lines joined", "data: a\ndata\ndata: b\n\n", "a\n\nb", ""},
		{"bare data crlf", "data\r\ndata: b\r\n\r\n", "\nb", ""},
		{"not a data field", "datax: a\ndata: b\ndata-y\n\n", "b", ""},
		{"dropped comment first", ": ping\n\ndata: a\n\n", "a", ""},
	}
	for _, c := range cases {
		for _, bufSize := range []int{4096, 16} {
			r := bufio.NewReaderSize(strings.NewReader(c.in), bufSize)
			prefix := []byte("prefix")
			dst, ev, err := readEvent(prefix, r, router.SurfaceChat)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			raw := strings.TrimPrefix(c.in, ": ping\n\n") // a dropped event
			if string(dst) != "prefix"+raw {
				t.Errorf("%s/buf%d: event %q, want it byte for byte", c.name, bufSize, dst)
			}
			var scratch []byte
			if got := ev.data(dst, &scratch); string(got) != c.data {
				t.Errorf("%s/buf%d: data %q, want %q", c.name, bufSize, got, c.data)
			}
			name := ""
			if ev.nameAt >= 0 {
				name = string(dst[ev.nameAt:ev.nameEnd])
			}
			if name != c.eventName {
				t.Errorf("%s/buf%d: name %q, want %q", c.name, bufSize, name, c.eventName)
			}
		}
	}

	// One data line is read in place; several are joined into the
	// scratch buffer, which is reused.
	dst, ev, _ := readEvent(nil, bufio.NewReader(strings.NewReader("data: abc\n\n")), router.SurfaceChat)
	if got := ev.data(dst, nil); &got[0] != &dst[len("data: ")] {
		t.Error("one data line was copied")
	}
	scratch := make([]byte, 0, 64)
	dst, ev, _ = readEvent(nil, bufio.NewReader(strings.NewReader("data: a\ndata: b\n\n")), router.SurfaceChat)
	if got := ev.data(dst, &scratch); string(got) != "a\nb" || &got[0] != &scratch[:1][0] {
		t.Errorf("joined data %q not in the scratch buffer", got)
	}

	// The input ends before the event's blank line: not dispatched.
	for _, in := range []string{"data: a", "data: a\n", "data: a\ndata: b\n", "data\n"} {
		dst, _, err := readEvent([]byte("p"), bufio.NewReader(strings.NewReader(in)), router.SurfaceChat)
		if err != io.EOF || string(dst) != "p" {
			t.Errorf("%q: dst %q err %v, want dst unchanged and io.EOF", in, dst, err)
		}
	}
}

// The gateway reads an OpenAI-compatible event as the client does: an
// error object or a usage split across two data lines (the client's SSE
// parser joins them) is seen, and the event is still relayed byte for byte.
func TestSSEDataLinesJoined(t *testing.T) {
	_, err := readAll(t, &SSEDecoder{}, "data: {\"error\":{\"message\":\"slow down\",\ndata: \"code\":\"rate_limit_exceeded\"}}\n\n", 16)
	var se *StreamError
	if !errors.As(err, &se) || se.Class != ClassRateLimited || se.Status != 429 {
		t.Fatalf("split error event: %v", err)
	}
	if string(se.Body) != "{\"error\":{\"message\":\"slow down\",\n\"code\":\"rate_limit_exceeded\"}}" {
		t.Fatalf("error body %q", se.Body)
	}

	d := &SSEDecoder{}
	usage := "data: {\"choices\":[],\n" + "data: \"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7}}\r\n\r\n"
	frames, err := readAll(t, d, "data: {\"id\":1}\n\n"+usage+"data: [DONE]\n\n", 16)
	if err != io.EOF || len(frames) != 3 || frames[1] != usage {
		t.Fatalf("frames %q err %v", frames, err)
	}
	if u := d.Usage(); !u.HasPrompt || u.Prompt != 11 || !u.HasCompletion || u.Completion != 7 {
		t.Fatalf("usage %+v, want 11+7 from the split usage chunk", u)
	}

	// [DONE] on a line of its own; a data line after it makes the data
	// something else, for the client as for the gateway.
	frames, err = readAll(t, &SSEDecoder{}, "data: [DONE]\ndata: x\n\ndata: [DONE]\n\n", 4096)
	if err != io.EOF || len(frames) != 2 || frames[0] != "data: [DONE]\ndata: x\n\n" {
		t.Fatalf("frames %q err %v", frames, err)
	}
}

// The named-event relays read the joined data too: a Messages error event
// and a message_delta's usage, each split across data lines, are seen.
func TestEventDataLinesJoined(t *testing.T) {
	errEvent := "event: error\ndata: {\"type\":\"error\",\ndata: \"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	frames, err := readAll(t, newEventStream(messagesEvents), errEvent, 16)
	var se *StreamError
	if !errors.As(err, &se) || se.Status != 529 || se.Class != ClassServer || !se.Framed || len(frames) != 1 || frames[0] != errEvent {
		t.Fatalf("split error event: frames %q err %v", frames, err)
	}

	s := newEventStream(messagesEvents)
	in := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":\ndata: {\"input_tokens\":5}}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\ndata: \"usage\":{\"output_tokens\":9}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	if _, err := readAll(t, s, in, 16); err != io.EOF {
		t.Fatalf("err %v", err)
	}
	if u := s.(UsageReporter).Usage(); u.Prompt != 5 || u.Completion != 9 {
		t.Fatalf("usage %+v, want 5+9 from the split events", u)
	}

	respErr := "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":\ndata: {\"code\":\"rate_limit_exceeded\",\"message\":\"slow\"}}}\n\n"
	_, err = readAll(t, newEventStream(responsesEvents), respErr, 4096)
	if !errors.As(err, &se) || se.Class != ClassRateLimited {
		t.Fatalf("split response.failed: %v", err)
	}
}

// The translating Anthropic decoder reads with readEvent: data lines are
// joined, and an event the input ends in (no blank line) is not
// dispatched, so the stream is truncated.
func TestAnthropicStreamSSEGrammar(t *testing.T) {
	split := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\ndata: \"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"
	frames, err := nextAll(t, anthropicTestStream(), bufio.NewReaderSize(strings.NewReader(anthStart+split+"data\n\n"), 16), 10)
	if len(frames) != 1 || !bytes.Contains(frames[0], []byte(`"content":"Hel"`)) {
		t.Fatalf("frames %q", frames)
	}
	if !errors.As(err, new(*StreamError)) || !strings.Contains(err.Error()+string(errBody(err)), "malformed") {
		t.Fatalf("a bare data line (empty data) is not JSON: err %v", err)
	}

	stop := "event: message_stop\ndata: {\"type\":\"message_stop\"}"
	for _, end := range []string{"", "\n"} {
		frames, err = nextAll(t, anthropicTestStream(), bufio.NewReader(strings.NewReader(anthStart+anthDelta+stop+end)), 10)
		var se *StreamError
		if !errors.As(err, &se) || !bytes.Contains(se.Body, []byte(errTruncated.Error())) || len(frames) != 1 {
			t.Fatalf("message_stop without its blank line%q: frames %q err %v", end, frames, err)
		}
	}
	frames, err = nextAll(t, anthropicTestStream(), bufio.NewReader(strings.NewReader(anthStart+anthDelta+stop+"\n\n")), 10)
	if err != io.EOF || len(frames) != 2 || string(frames[1]) != doneFrame {
		t.Fatalf("complete message_stop: frames %q err %v", frames, err)
	}
}

// errBody returns the body of a *StreamError, or nil.
func errBody(err error) []byte {
	var se *StreamError
	if errors.As(err, &se) {
		return se.Body
	}
	return nil
}

// readEvents reads every event of in with readEvent through a bufio.Reader
// of size bufSize over src(in), and returns each event's bytes, name
// ("-": no event field) and data, until the input ends.
func readEvents(t *testing.T, src io.Reader, bufSize int) (raw, names, data []string) {
	t.Helper()
	r := bufio.NewReaderSize(src, bufSize)
	var scratch []byte
	for range 100 {
		dst, ev, err := readEvent(nil, r, router.SurfaceChat)
		if err == io.EOF {
			return raw, names, data
		}
		if err != nil {
			t.Fatalf("err %v", err)
		}
		name := "-"
		if ev.nameAt >= 0 {
			name = string(dst[ev.nameAt:ev.nameEnd])
		}
		raw = append(raw, string(dst))
		names = append(names, name)
		data = append(data, string(ev.data(dst, &scratch)))
	}
	t.Fatal("readEvent did not end")
	return nil, nil, nil
}

// The readers an SSE test feeds readEvent through: the input in one read,
// in reads of a few bytes, and one byte per read (so that every CRLF is
// split across two reads).
var sseReaders = []struct {
	name    string
	bufSize int
	src     func(string) io.Reader
}{
	{"whole", 4096, func(s string) io.Reader { return strings.NewReader(s) }},
	{"buf16", 16, func(s string) io.Reader { return strings.NewReader(s) }},
	{"onebyte", 16, func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) }},
}

// The event field as the client's SSE parser reads it: every "event" line
// sets the event type, so the last one wins; a bare "event" line sets it
// to ""; a field whose name only starts with "event" is another field.
func TestReadEventName(t *testing.T) {
	cases := []struct {
		name, in, eventName string
	}{
		{"one", "event: a\ndata: x\n\n", "a"},
		{"last wins", "event: a\nevent: b\ndata: x\n\n", "b"},
		{"last wins after data", "event: a\ndata: x\nevent: b\n\n", "b"},
		{"last wins crlf", "event: a\r\nevent:b\r\ndata: x\r\n\r\n", "b"},
		{"bare event line", "event\ndata: x\n\n", ""},
		{"bare event line last", "event: a\nevent\ndata: x\n\n", ""},
		{"bare event line crlf", "event: a\r\nevent\r\ndata: x\r\n\r\n", ""},
		{"empty value last", "event: a\nevent:\ndata: x\n\n", ""},
		{"longer field name", "events: a\ndata: x\n\n", "-"},
		{"longer field name after", "event: a\nevents: b\nevent-x\ndata: x\n\n", "a"},
		{"dropped event's name", "event: a\n\ndata: x\n\n", "-"},
	}
	for _, c := range cases {
		for _, rd := range sseReaders {
			raw, names, _ := readEvents(t, rd.src(c.in), rd.bufSize)
			if len(names) != 1 || names[0] != c.eventName {
				t.Errorf("%s/%s: names %q, want [%q]", c.name, rd.name, names, c.eventName)
			}
			if len(raw) == 1 && !strings.HasSuffix(c.in, raw[0]) {
				t.Errorf("%s/%s: event %q, want it byte for byte", c.name, rd.name, raw[0])
			}
		}
	}
}

// A named-event relay decides on the name the client sees: an error event
// renamed by a later event line is not an error for the client, and an
// ordinary event renamed "error" is one.
func TestEventLastNameWins(t *testing.T) {
	errData := "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	in := "event: message_delta\nevent: error\n" + errData
	frames, err := readAll(t, newEventStream(messagesEvents), in, 4096)
	var se *StreamError
	if !errors.As(err, &se) || se.Status != 529 || len(frames) != 1 || frames[0] != in {
		t.Fatalf("renamed error: frames %q err %v", frames, err)
	}

	stop := "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	in = "event: error\nevent: ping\n" + errData + stop
	frames, err = readAll(t, newEventStream(messagesEvents), in, 4096)
	if err != io.EOF || len(frames) != 2 {
		t.Fatalf("error renamed ping: frames %q err %v, want it relayed as a ping", frames, err)
	}
}

// Line endings as the SSE spec (and so the client's parser) reads them:
// CRLF, LF and a lone CR each end a line, in any mix; a CRLF split across
// two reads is one line ending. Events are relayed byte for byte.
func TestReadEventLineEndings(t *testing.T) {
	type event struct{ raw, name, data string }
	cases := []struct {
		name   string
		events []event
	}{
		{"lf", []event{{"event: e\ndata: a\n\n", "e", "a"}, {"data: b\n\n", "-", "b"}}},
		{"crlf", []event{{"event: e\r\ndata: a\r\ndata: b\r\n\r\n", "e", "a\nb"}, {"data: c\r\n\r\n", "-", "c"}}},
		{"lone cr", []event{{"event: e\rdata: a\r\r", "e", "a"}, {"data: b\r\r", "-", "b"}}},
		{"lone cr data lines joined", []event{{"data: a\rdata\rdata:  b\r\r", "-", "a\n\n b"}, {"data: c\rdata: d\r\r", "-", "c\nd"}}},
		{"lone cr fields", []event{{"id: 1\r: c\revent: x\revent: y\rdata: a\rretry: 5\r\r", "y", "a"}}},
		{"mixed", []event{
			{"event: x\rdata: a\r\ndata: b\ndata: c\n\r\n", "x", "a\nb\nc"},
			{"data: d\n\r", "-", "d"},
			{"data: e\r\n\n", "-", "e"},
			{"data: f\r\n\r", "-", "f"},
		}},
		{"crlf after lone cr", []event{{"data: a\r\r", "-", "a"}, {"data: b\r\n\r\n", "-", "b"}}},
	}
	for _, c := range cases {
		var in string
		for _, e := range c.events {
			in += e.raw
		}
		for _, rd := range sseReaders {
			raw, names, data := readEvents(t, rd.src(in), rd.bufSize)
			if len(raw) != len(c.events) {
				t.Errorf("%s/%s: %d events %q, want %d", c.name, rd.name, len(raw), raw, len(c.events))
				continue
			}
			for i, e := range c.events {
				if raw[i] != e.raw || names[i] != e.name || data[i] != e.data {
					t.Errorf("%s/%s: event %d %q name %q data %q, want %q %q %q",
						c.name, rd.name, i, raw[i], names[i], data[i], e.raw, e.name, e.data)
				}
			}
		}
	}

	// The input ends before the event's blank line (a CR that ends the
	// last data line is no blank line): not dispatched.
	for _, in := range []string{"data: a\r", "data: a\r\n", "data: a\rdata: b\r", "data: a\r\r\n\r"} {
		for _, rd := range sseReaders {
			r := bufio.NewReaderSize(rd.src(in), rd.bufSize)
			if strings.HasSuffix(in, "\r\n\r") {
				// The first event is complete; the LF after it and
				// the lone CR are blank lines of no event.
				if _, _, err := readEvent(nil, r, router.SurfaceChat); err != nil {
					t.Fatalf("%q/%s: %v", in, rd.name, err)
				}
			}
			dst, _, err := readEvent([]byte("p"), r, router.SurfaceChat)
			if err != io.EOF || string(dst) != "p" {
				t.Errorf("%q/%s: dst %q err %v, want dst unchanged and io.EOF", in, rd.name, dst, err)
			}
		}
	}
}

// A stream with lone CR line endings is read as the client reads it: its
// events one by one, and an error in the first frame is seen (not taken
// for one oversized line and missed).
func TestSSELoneCR(t *testing.T) {
	for _, rd := range sseReaders {
		in := "data: {\"error\":{\"message\":\"slow down\",\"code\":\"rate_limit_exceeded\"}}\r\rdata: [DONE]\r\r"
		br := bufio.NewReaderSize(rd.src(in), rd.bufSize)
		_, err := (&SSEDecoder{}).Next(nil, br)
		var se *StreamError
		if !errors.As(err, &se) || se.Class != ClassRateLimited || se.Status != 429 {
			t.Fatalf("%s: first-frame error: %v", rd.name, err)
		}

		d := &SSEDecoder{}
		chunk := "data: {\"id\":1}\r\r"
		usage := "data: {\"choices\":[],\rdata: \"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7}}\r\r"
		frames, err := nextAll(t, d, bufio.NewReaderSize(rd.src(chunk+usage+"data: [DONE]\r\r"), rd.bufSize), 10)
		if err != io.EOF || len(frames) != 3 || string(frames[0]) != chunk || string(frames[1]) != usage || string(frames[2]) != doneFrame {
			t.Fatalf("%s: frames %q err %v", rd.name, frames, err)
		}
		if u := d.Usage(); u.Prompt != 11 || u.Completion != 7 {
			t.Fatalf("%s: usage %+v, want 11+7", rd.name, u)
		}

		errEvent := "event: error\rdata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\r\r"
		frames, err = nextAll(t, newEventStream(messagesEvents), bufio.NewReaderSize(rd.src(errEvent), rd.bufSize), 10)
		if !errors.As(err, &se) || se.Status != 529 || len(frames) != 1 || string(frames[0]) != errEvent {
			t.Fatalf("%s: messages error event: frames %q err %v", rd.name, frames, err)
		}
	}
}
