package provider

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/provider/providertest"
	"github.com/switchyard/switchyard/router"
)

// floodSize is how much a hostile upstream offers in these tests: eight
// times MaxSSEEvent, produced lazily (never held in memory by the test).
const floodSize = 64 << 20

// floodReader yields prefix, then pattern repeated, up to size bytes in
// all, then io.EOF. read counts the bytes handed out, so a test can tell
// how much a decoder pulled from its source.
type floodReader struct {
	prefix, pattern []byte
	size            int64
	read            int64
}

// newFlood returns a floodReader of size bytes; the pattern is repeated
// to a few KiB first so that Read copies in large pieces.
func newFlood(prefix, pattern []byte, size int64) *floodReader {
	return &floodReader{prefix: prefix, pattern: bytes.Repeat(pattern, 4096/len(pattern)+1), size: size}
}

func (f *floodReader) Read(p []byte) (int, error) {
	if f.read >= f.size {
		return 0, io.EOF
	}
	if rem := f.size - f.read; int64(len(p)) > rem {
		p = p[:rem]
	}
	n := 0
	for n < len(p) {
		if f.read+int64(n) < int64(len(f.prefix)) {
			n += copy(p[n:], f.prefix[f.read+int64(n):])
			continue
		}
		off := (f.read + int64(n) - int64(len(f.prefix))) % int64(len(f.pattern))
		n += copy(p[n:], f.pattern[off:])
	}
	f.read += int64(n)
	return n, nil
}

// nextAll calls dec.Next until it returns an error (at most limit calls)
// and returns the frames and that error.
func nextAll(t *testing.T, dec StreamDecoder, r *bufio.Reader, limit int) ([][]byte, error) {
	t.Helper()
	var frames [][]byte
	for range limit {
		out, err := dec.Next(nil, r)
		if len(out) > 0 {
			frames = append(frames, out)
		}
		if err != nil {
			return frames, err
		}
	}
	t.Fatalf("no error after %d calls", limit)
	return nil, nil
}

// wantOversized fails unless err is the transport-class oversized-event
// error (the one the OpenAI-compatible relay gives).
func wantOversized(t *testing.T, err error) {
	t.Helper()
	var se *StreamError
	if !errors.As(err, &se) || se.Class != ClassTransport || se.Status != 502 ||
		!strings.Contains(string(se.Body), "exceeds "+strconv.Itoa(MaxSSEEvent)+" bytes") {
		t.Fatalf("err %v, want an oversized-event transport error", err)
	}
}

func anthropicTestStream() StreamDecoder {
	return newAnthropicAdapter().NewStream(&Call{Surface: router.SurfaceChat, Stream: true,
		Body: []byte(`{"model":"m","stream":true,"messages":[]}`), Model: []byte("m")})
}

const (
	anthStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":3}}}\n\n"
	anthDelta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"
)

// An Anthropic upstream that never ends an event (no newline at all, data
// lines with no blank line, comments with no blank line) is cut at
// MaxSSEEvent as a transport failure: the decoder neither reads the whole
// flood nor grows its event or data buffers past the bound.
func TestAnthropicStreamOversizedEvent(t *testing.T) {
	cases := []struct {
		name            string
		prefix, pattern string
		frames          int // complete frames before the error
	}{
		{"no newline", "data: ", "a", 0},
		{"data lines without a blank line", "", "data: x\n", 0},
		{"crlf data lines without a blank line", "event: content_block_delta\r\n", "data: x\r\n", 0},
		{"comments without a blank line", "", ": ping\n", 0},
		{"after a committed frame", anthStart + anthDelta + "data: ", "y", 1},
		{"data lines after a committed frame", anthStart + anthDelta, "data: {\"type\":\"ping\"}\n", 1},
	}
	for _, c := range cases {
		for _, bufSize := range []int{16 << 10, 16} {
			t.Run(c.name+"/buf"+strconv.Itoa(bufSize), func(t *testing.T) {
				src := newFlood([]byte(c.prefix), []byte(c.pattern), floodSize)
				dec := anthropicTestStream()
				frames, err := nextAll(t, dec, bufio.NewReaderSize(src, bufSize), 10)
				wantOversized(t, err)
				if len(frames) != c.frames {
					t.Fatalf("%d frames before the error, want %d: %q", len(frames), c.frames, frames)
				}
				if c.frames > 0 && !bytes.Contains(frames[0], []byte(`"content":"Hel"`)) {
					t.Fatalf("first frame %s", frames[0])
				}
				if limit := int64(len(c.prefix) + MaxSSEEvent + bufSize); src.read > limit {
					t.Fatalf("read %d bytes of the flood, want at most %d", src.read, limit)
				}
				d := dec.(*anthropicStream)
				if held := cap(d.raw) + cap(d.scratch); held > 2*MaxSSEEvent {
					t.Fatalf("decoder holds %d bytes of buffers", held)
				}
			})
		}
	}
}

// The bound is the OpenAI-compatible relay's: an event of exactly
// MaxSSEEvent bytes (its blank line included) is delivered, one byte more
// is refused.
func TestAnthropicStreamEventLimitBoundary(t *testing.T) {
	head := `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`
	tail := `"}}` + "\n\n"
	n := MaxSSEEvent - len(head) - len(tail)
	event := head + strings.Repeat("Z", n) + tail
	if len(event) != MaxSSEEvent {
		t.Fatalf("BUG: event of %d bytes", len(event))
	}
	dec := anthropicTestStream()
	out, err := dec.Next(nil, bufio.NewReaderSize(strings.NewReader(event), 16<<10))
	if err != nil || bytes.Count(out, []byte("Z")) != n {
		t.Fatalf("event at the limit: err %v, %d of %d bytes of text relayed", err, bytes.Count(out, []byte("Z")), n)
	}

	over := head + strings.Repeat("Z", n+1) + tail
	out, err = anthropicTestStream().Next(nil, bufio.NewReaderSize(strings.NewReader(over), 16<<10))
	wantOversized(t, err)
	if len(out) != 0 {
		t.Fatalf("a frame with the error: %.100q", out)
	}
}

// providertest.Prelude returns an event-stream providertest.Prelude with the given lengths and a
// valid (or, with badCRC, a wrong) providertest.Prelude CRC.

func bedrockTestStream() StreamDecoder {
	return newBedrockAdapter().NewStream(&Call{Surface: router.SurfaceChat, Stream: true,
		Body: []byte(`{"model":"m","stream":true,"messages":[]}`), Model: []byte("m")})
}

// A Bedrock frame providertest.Prelude is checked before the event-stream decoder sees
// it: the decoder would otherwise trust a total length up to 4 GiB (and a
// headers length over the total, or a total under the 16-byte minimum,
// wraps the payload length to about 4 GiB) and read that much before the
// message CRC could fail. Such a frame is refused at once, as a transport
// failure, having read no more than one buffer of the source.
func TestBedrockStreamHostilePrelude(t *testing.T) {
	text := providertest.BedrockFrame(t, "messageStart", []byte(`{"role":"assistant"}`))
	text = append(text, providertest.BedrockFrame(t, "contentBlockDelta", []byte(`{"contentBlockIndex":0,"delta":{"text":"Hel"}}`))...)
	cases := []struct {
		name      string
		prefix    []byte
		oversized bool // else malformed
		frames    int
	}{
		{"4 GiB total", providertest.Prelude(0xFFFFFFFF, 0, false), true, 0},
		{"total just over the limit", providertest.Prelude(MaxSSEEvent+1, 0, false), true, 0},
		{"headers over the total", providertest.Prelude(100, 200, false), false, 0},
		{"headers leave no room for the message CRC", providertest.Prelude(100, 85, false), false, 0},
		{"total under the minimum", providertest.Prelude(8, 0, false), false, 0},
		{"zero total", providertest.Prelude(0, 0, false), false, 0},
		{"bad providertest.Prelude CRC", providertest.Prelude(0xFFFFFFFF, 0, true), false, 0},
		{"4 GiB total after a committed frame", append(append([]byte(nil), text...), providertest.Prelude(0xFFFFFFFF, 0, false)...), true, 1},
		{"wrapped payload after a committed frame", append(append([]byte(nil), text...), providertest.Prelude(64, 1000, false)...), false, 1},
	}
	for _, c := range cases {
		for _, bufSize := range []int{16 << 10, 16} {
			t.Run(c.name+"/buf"+strconv.Itoa(bufSize), func(t *testing.T) {
				src := newFlood(c.prefix, []byte{0}, floodSize)
				frames, err := nextAll(t, bedrockTestStream(), bufio.NewReaderSize(src, bufSize), 10)
				if c.oversized {
					wantOversized(t, err)
				} else {
					var se *StreamError
					if !errors.As(err, &se) || se.Class != ClassTransport || se.Status != 502 ||
						!strings.Contains(string(se.Body), "malformed event") {
						t.Fatalf("err %v, want a malformed-event transport error", err)
					}
				}
				if len(frames) != c.frames {
					t.Fatalf("%d frames before the error, want %d", len(frames), c.frames)
				}
				if c.frames > 0 && !bytes.Contains(frames[0], []byte(`"content":"Hel"`)) {
					t.Fatalf("first frame %s", frames[0])
				}
				if limit := int64(len(c.prefix) + bufSize); src.read > limit {
					t.Fatalf("read %d bytes of the flood, want at most %d", src.read, limit)
				}
			})
		}
	}
}

// A frame of exactly MaxSSEEvent bytes is decoded; the limit refuses only
// what is over it. Short reads keep their meaning: a clean end between
// frames after messageStop is the end of the answer, a cut providertest.Prelude is a
// truncated stream.
func TestBedrockStreamFrameLimitBoundary(t *testing.T) {
	head, tail := `{"contentBlockIndex":0,"delta":{"text":"`, `"}}`
	overhead := len(providertest.BedrockFrame(t, "contentBlockDelta", []byte(head+tail)))
	n := MaxSSEEvent - overhead
	frame := providertest.BedrockFrame(t, "contentBlockDelta", []byte(head+strings.Repeat("Z", n)+tail))
	if len(frame) != MaxSSEEvent {
		t.Fatalf("BUG: frame of %d bytes", len(frame))
	}
	out, err := bedrockTestStream().Next(nil, bufio.NewReaderSize(bytes.NewReader(frame), 16<<10))
	if err != nil || bytes.Count(out, []byte("Z")) != n {
		t.Fatalf("frame at the limit: err %v, %d of %d bytes of text relayed", err, bytes.Count(out, []byte("Z")), n)
	}

	stop := providertest.BedrockFrame(t, "messageStop", []byte(`{"stopReason":"end_turn"}`))
	in := append(providertest.BedrockFrame(t, "contentBlockDelta", []byte(`{"contentBlockIndex":0,"delta":{"text":"Hel"}}`)), stop...)
	frames, err := nextAll(t, bedrockTestStream(), bufio.NewReaderSize(bytes.NewReader(in), 16), 10)
	if err != io.EOF || len(frames) != 3 || string(frames[2]) != "data: [DONE]\n\n" {
		t.Fatalf("clean end after messageStop: err %v frames %q", err, frames)
	}
	for _, cut := range []int{1, 11} {
		frames, err = nextAll(t, bedrockTestStream(), bufio.NewReaderSize(bytes.NewReader(append(append([]byte(nil), in...), stop[:cut]...)), 16), 10)
		var se *StreamError
		if !errors.As(err, &se) || se.Class != ClassTransport || !strings.Contains(string(se.Body), errTruncated.Error()) || len(frames) != 2 {
			t.Fatalf("providertest.Prelude cut after %d bytes: err %v frames %q", cut, err, frames)
		}
	}
}
