package provider

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

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
