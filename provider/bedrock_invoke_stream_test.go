package provider

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/switchyard/switchyard/provider/providertest"
	"github.com/switchyard/switchyard/router"
)

// Anthropic's events as Claude on Bedrock streams them; message_stop
// carries Bedrock's invocation metrics.
const (
	evStart = `{"type":"message_start","message":{"id":"msg_bdrk_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":1}}}`
	evPing  = `{"type":"ping"}`
	evBlock = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	evDelta = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`
	evBStop = `{"type":"content_block_stop","index":0}`
	evMDel  = `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}`
	evStop  = `{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":12,"outputTokenCount":7,"invocationLatency":420,"firstByteLatency":210}}`
)

// encodeFrame writes one event-stream frame with the SDK's encoder (real
// CRCs).
func encodeFrame(t testing.TB, headers map[string]string, payload []byte) []byte {
	t.Helper()
	var m eventstream.Message
	for _, k := range []string{":message-type", ":event-type", ":exception-type", ":error-code", ":error-message", ":content-type"} {
		if v, ok := headers[k]; ok {
			m.Headers.Set(k, eventstream.StringValue(v))
		}
	}
	m.Payload = payload
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// chunkFrame is a chunk frame carrying event, as Bedrock sends it (with
// its random-length "p" padding).
func chunkFrame(t testing.TB, event string) []byte {
	payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(event)), "p": "abcdefghij"})
	return rawChunkFrame(t, payload)
}

func rawChunkFrame(t testing.TB, payload []byte) []byte {
	return encodeFrame(t, map[string]string{":message-type": "event", ":event-type": "chunk", ":content-type": "application/json"}, payload)
}

func exceptionFrame(t testing.TB, typ, msg string) []byte {
	payload, _ := json.Marshal(map[string]string{"message": msg})
	return encodeFrame(t, map[string]string{":message-type": "exception", ":exception-type": typ, ":content-type": "application/json"}, payload)
}

func sseOf(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		var v struct{ Type string }
		json.Unmarshal([]byte(e), &v) //nolint:errcheck // test constants
		b.WriteString("event: " + v.Type + "\ndata: " + e + "\n\n")
	}
	return b.String()
}

// drain runs a fresh decoder over in to its end and returns the frames of
// each Next and the final error.
func drain(t testing.TB, in []byte, bufSize int) ([]string, *invokeStream, error) {
	t.Helper()
	d := newInvokeStream()
	r := bufio.NewReaderSize(bytes.NewReader(in), bufSize)
	var frames []string
	for i := 0; ; i++ {
		if i > len(in)+2 {
			t.Fatalf("no end after %d calls", i)
		}
		out, err := d.Next(nil, r)
		if len(out) > 0 {
			frames = append(frames, string(out))
		}
		if err != nil {
			return frames, d, err
		}
		if len(out) == 0 {
			t.Fatal("an empty frame without an error")
		}
	}
}

func join(frames ...[]byte) []byte { return bytes.Join(frames, nil) }

// Every chunk leaves as Anthropic's SSE event, byte for byte; message_start
// (and a ping after it) leave with the next event; message_stop ends the
// stream; the usage is the native relay's.
func TestInvokeStreamRelay(t *testing.T) {
	in := join(chunkFrame(t, evStart), chunkFrame(t, evPing), chunkFrame(t, evBlock), chunkFrame(t, evDelta),
		chunkFrame(t, evBStop), chunkFrame(t, evMDel), chunkFrame(t, evStop),
		chunkFrame(t, evDelta)) // after message_stop: never read
	for _, size := range []int{16, 1024, 64 << 10} {
		frames, d, err := drain(t, in, size)
		if err != io.EOF {
			t.Fatalf("buf %d: %v", size, err)
		}
		want := []string{sseOf(evStart, evPing, evBlock), sseOf(evDelta), sseOf(evBStop), sseOf(evMDel), sseOf(evStop)}
		if strings.Join(frames, "|") != strings.Join(want, "|") {
			t.Errorf("buf %d: frames\n got  %q\n want %q", size, frames, want)
		}
		if u := d.Usage(); !u.HasPrompt || u.Prompt != 2112 || !u.HasCompletion || u.Completion != 7 {
			t.Errorf("usage %+v", u)
		}
		if out, err := d.Next(nil, bufio.NewReader(bytes.NewReader(nil))); err != io.EOF || len(out) != 0 {
			t.Errorf("after the end: %q %v", out, err)
		}
	}
	// One byte at a time reads the same.
	d := newInvokeStream()
	r := bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(in)), 16)
	var out []byte
	var err error
	for calls := 0; err == nil; calls++ {
		if calls > 10 {
			t.Fatal("no end")
		}
		out, err = d.Next(out, r)
	}
	if err != io.EOF || string(out) != sseOf(evStart, evPing, evBlock, evDelta, evBStop, evMDel, evStop) {
		t.Errorf("one byte reads: %v %q", err, out)
	}
}

// Pings held after message_start are bounded: the frame leaves once it
// passes maxHeld bytes (MaxSSEEvent; 4 KiB here).
func TestInvokeStreamHeldBounded(t *testing.T) {
	defer func(m int) { maxHeld = m }(maxHeld)
	maxHeld = 4 << 10
	ping := chunkFrame(t, evPing)
	n := maxHeld/len(sseOf(evPing)) + 2
	in := append(chunkFrame(t, evStart), bytes.Repeat(ping, n)...)
	d := newInvokeStream()
	out, err := d.Next(nil, bufio.NewReaderSize(bytes.NewReader(in), 1024))
	if err != nil || len(out) <= maxHeld || len(out) > maxHeld+len(sseOf(evPing))+len(sseOf(evStart)) {
		t.Fatalf("%v: a frame of %d bytes", err, len(out))
	}
}

// The native relay and this one agree on every event's bytes and usage.
func TestInvokeStreamMatchesNativeRelay(t *testing.T) {
	events := []string{evStart, evPing, evBlock, evDelta, evBStop, evMDel, evStop}
	var frames [][]byte
	for _, e := range events {
		frames = append(frames, chunkFrame(t, e))
	}
	got, d, err := drain(t, join(frames...), 4096)
	if err != io.EOF {
		t.Fatal(err)
	}
	native := newEventStream(messagesEvents)
	r := bufio.NewReader(strings.NewReader(sseOf(events...)))
	var want []string
	for {
		out, err := native.Next(nil, r)
		if len(out) > 0 {
			want = append(want, string(out))
		}
		if err != nil {
			break
		}
	}
	if strings.Join(got, "") != strings.Join(want, "") || len(got) != len(want) {
		t.Errorf("frames\n bedrock %q\n native  %q", got, want)
	}
	if d.Usage() != native.(UsageReporter).Usage() {
		t.Errorf("usage %+v, native %+v", d.Usage(), native.(UsageReporter).Usage())
	}
}

// An exception frame is a failure classified by its type, in Anthropic's
// envelope, not framed: before the first event it is an ordinary attempt
// failure, after it the relay writes it as the error event.
func TestInvokeStreamExceptions(t *testing.T) {
	for _, tc := range []struct {
		typ, msg string
		class    Class
		status   int
		anthType string
	}{
		{"throttlingException", "Too many tokens, please wait before trying again.", ClassRateLimited, 429, "rate_limit_error"},
		{"serviceUnavailableException", "Bedrock is unable to process your request.", ClassServer, 503, "overloaded_error"},
		{"internalServerException", "The server encountered an error.", ClassServer, 500, "api_error"},
		{"modelStreamErrorException", "The model stream failed.", ClassServer, 502, "api_error"},
		{"modelTimeoutException", "Model timed out.", ClassServer, 504, "api_error"},
		{"modelNotReadyException", "Model is not ready.", ClassServer, 503, "overloaded_error"},
		{"validationException", "messages: bad", ClassClient, 400, "invalid_request_error"},
		{"validationException", "Input is too long for requested model.", ClassContextLength, 400, "invalid_request_error"},
		{"validationException", "prompt is too long: 201000 tokens > 200000 maximum", ClassContextLength, 400, "invalid_request_error"},
		{"accessDeniedException", "no", ClassAuth, 403, "permission_error"},
		{"someNewException", "new", ClassServer, 500, "api_error"},
	} {
		for _, after := range []bool{false, true} {
			in := exceptionFrame(t, tc.typ, tc.msg)
			if after {
				in = join(chunkFrame(t, evStart), chunkFrame(t, evBlock), in)
			}
			frames, _, err := drain(t, in, 1024)
			var se *StreamError
			if !errors.As(err, &se) || se.Class != tc.class || se.Status != tc.status || se.Framed {
				t.Fatalf("%s (after %v): %v %+v", tc.typ, after, err, se)
			}
			var env struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if json.Unmarshal(se.Body, &env) != nil || env.Type != "error" || env.Error.Type != tc.anthType || env.Error.Message != tc.msg {
				t.Errorf("%s: envelope %s", tc.typ, se.Body)
			}
			if wantFrames := map[bool]int{false: 0, true: 1}[after]; len(frames) != wantFrames {
				t.Errorf("%s (after %v): frames %q", tc.typ, after, frames)
			}
		}
	}
	// An error message-type frame names its code and message in headers.
	_, _, err := drain(t, encodeFrame(t, map[string]string{":message-type": "error", ":error-code": "throttlingException",
		":error-message": "slow down"}, nil), 64)
	var se *StreamError
	if !errors.As(err, &se) || se.Class != ClassRateLimited || !strings.Contains(string(se.Body), "slow down") {
		t.Errorf("error frame: %v", err)
	}
}

// An Anthropic error event inside a chunk is the upstream's own event:
// framed, classified as the native relay classifies it.
func TestInvokeStreamErrorEvent(t *testing.T) {
	const ev = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	frames, _, err := drain(t, join(chunkFrame(t, evStart), chunkFrame(t, ev)), 1024)
	var se *StreamError
	if !errors.As(err, &se) || !se.Framed || se.Class != ClassServer || string(se.Body) != ev {
		t.Fatalf("%v %+v", err, se)
	}
	if len(frames) != 1 || frames[0] != sseOf(evStart, ev) {
		t.Errorf("frames %q", frames)
	}
}

// Hostile or broken upstream bytes end in a clear transport failure in
// Anthropic's envelope, never a panic or a hang; frames the relay does not
// know are skipped.
func TestInvokeStreamHostile(t *testing.T) {
	good := chunkFrame(t, evDelta)
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 1
	badPayload := append([]byte(nil), good...)
	badPayload[len(badPayload)-10] ^= 0x40 // payload changed, CRC not
	oversized := append(providertest.Prelude(MaxSSEEvent+1, 0, false), make([]byte, 64)...)
	lying := providertest.Prelude(64, 80, false) // headers longer than the frame
	huge := make([]byte, 16)
	binary.BigEndian.PutUint32(huge, 1<<31)
	// A header of value type 48 (there are ten), CRCs right.
	badHeader := append(providertest.Prelude(19, 3, false), 1, 'x', 48)
	badHeader = binary.BigEndian.AppendUint32(badHeader, crc32.ChecksumIEEE(badHeader))

	for _, tc := range []struct {
		name string
		in   []byte
		want string // in the error message
	}{
		{"empty", nil, "ended before its last event"},
		{"ends before message_stop", join(chunkFrame(t, evStart), good), "ended before its last event"},
		{"truncated frame", good[:len(good)-5], "ended inside an event-stream frame"},
		{"truncated prelude", good[:7], "ended inside an event-stream frame"},
		{"bad message CRC", badCRC, "failed its CRC check"},
		{"payload corrupted", badPayload, "failed its CRC check"},
		{"bad prelude CRC", append(providertest.Prelude(32, 0, true), make([]byte, 20)...), "malformed event"},
		{"headers longer than the frame", append(lying, make([]byte, 52)...), "malformed event"},
		{"oversized frame", oversized, "exceeds"},
		{"header of an unknown type", badHeader, "malformed event-stream frame"},
		{"4 GiB length", huge, "malformed event"},
		{"payload not JSON", rawChunkFrame(t, []byte(`{"bytes":`)), "payload is not JSON"},
		{"no bytes", rawChunkFrame(t, []byte(`{"p":"x"}`)), "no bytes string"},
		{"bytes not a string", rawChunkFrame(t, []byte(`{"bytes":12}`)), "no bytes string"},
		{"bytes not base64", rawChunkFrame(t, []byte(`{"bytes":"!!!!"}`)), "not base64"},
		{"bytes base64url", rawChunkFrame(t, []byte(`{"bytes":"`+base64.URLEncoding.EncodeToString([]byte(`{"type":"ping","x":"??>>"}`))+`"}`)), "not base64"},
		{"event not JSON", chunkFrame(t, `{"type":"ping"`), "not a JSON object"},
		{"event an array", chunkFrame(t, `["type","ping"]`), "not a JSON object"},
		{"event without type", chunkFrame(t, `{"index":0}`), "no single, plain type"},
		{"type not a string", chunkFrame(t, `{"type":7}`), "no single, plain type"},
		{"type twice", chunkFrame(t, `{"type":"message_stop","type":"error"}`), "no single, plain type"},
		{"type escaped twice", chunkFrame(t, `{"type":"ping","typ\u0065":"message_stop"}`), "no single, plain type"},
		{"type with a line break", chunkFrame(t, `{"type":"ping\ndata: x"}`), "no single, plain type"},
		{"type with a space", chunkFrame(t, `{"type":"message stop"}`), "no single, plain type"},
		{"type empty", chunkFrame(t, `{"type":""}`), "no single, plain type"},
		{"type too long", chunkFrame(t, `{"type":"`+strings.Repeat("a", 65)+`"}`), "no single, plain type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := drain(t, tc.in, 64)
			var se *StreamError
			if !errors.As(err, &se) || se.Class != ClassTransport || se.Framed {
				t.Fatalf("%v %+v", err, se)
			}
			var env struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if json.Unmarshal(se.Body, &env) != nil || env.Type != "error" || env.Error.Type != "api_error" || !strings.Contains(env.Error.Message, tc.want) {
				t.Errorf("envelope %s, want a message with %q", se.Body, tc.want)
			}
		})
	}
}

func TestInvokeStreamSkipsUnknownFrames(t *testing.T) {
	in := join(
		encodeFrame(t, map[string]string{":message-type": "event", ":event-type": "initial-response"}, []byte(`{}`)),
		encodeFrame(t, map[string]string{":message-type": "event", ":event-type": "somethingNew"}, []byte(`not json at all`)),
		encodeFrame(t, map[string]string{":message-type": "telemetry"}, nil),
		encodeFrame(t, map[string]string{}, nil), // no message type
		chunkFrame(t, evStart), chunkFrame(t, evStop))
	frames, _, err := drain(t, in, 64)
	if err != io.EOF || len(frames) != 1 || frames[0] != sseOf(evStart, evStop) {
		t.Errorf("%v %q", err, frames)
	}
	// An Anthropic event type the relay does not know passes on as it came
	// (clients ignore what they do not know).
	const ev = `{"type":"content_block_citation_v9","x":1}`
	frames, _, err = drain(t, join(chunkFrame(t, ev), chunkFrame(t, evStop)), 64)
	if err != io.EOF || strings.Join(frames, "") != sseOf(ev, evStop) {
		t.Errorf("%v %q", err, frames)
	}
}

// An event whose JSON holds line breaks between tokens would split its SSE
// data line: it leaves re-encoded on one line, meaning unchanged.
func TestInvokeStreamMultilineEvent(t *testing.T) {
	const ev = "{\n  \"type\": \"content_block_delta\",\r\n  \"index\": 0,\n  \"delta\": {\"type\": \"text_delta\", \"text\": \"a\\nb\"}\n}"
	frames, _, err := drain(t, join(chunkFrame(t, ev), chunkFrame(t, evStop)), 64)
	if err != io.EOF || len(frames) != 2 {
		t.Fatalf("%v %q", err, frames)
	}
	const want = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\\nb\"}}\n\n"
	if frames[0] != want {
		t.Errorf("frame %q", frames[0])
	}
}

// The decoder a bedrock target gives the messages surface.
func TestBedrockMessagesNewStream(t *testing.T) {
	a, _ := Pick(Lookup(Bedrock).Adapter, &Endpoint{}, router.SurfaceMessages, false, []byte("anthropic.claude-x"))
	if _, ok := a.NewStream(&Call{Surface: router.SurfaceMessages, Stream: true}).(*invokeStream); !ok {
		t.Errorf("%T", a.NewStream(&Call{}))
	}
}
