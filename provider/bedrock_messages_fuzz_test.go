package provider

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// fuzzFrames turns the fuzzer's bytes into event-stream frames with valid
// CRCs, so that the layers under the framing are reached: parts split on
// 0x00, each part's first byte choosing what it becomes (a chunk carrying
// the rest as its event, a chunk whose payload is the rest, an exception of
// that type, a frame of another event type).
func fuzzFrames(t testing.TB, in []byte) []byte {
	var out []byte
	for _, part := range bytes.Split(in, []byte{0}) {
		if len(part) == 0 {
			continue
		}
		kind, rest := part[0]%4, part[1:]
		switch kind {
		case 0:
			payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString(rest)})
			out = append(out, rawChunkFrame(t, payload)...)
		case 1:
			out = append(out, rawChunkFrame(t, rest)...)
		case 2:
			out = append(out, encodeFrame(t, map[string]string{":message-type": "exception", ":exception-type": string(rest)}, []byte(`{"message":"m"}`))...)
		default:
			out = append(out, encodeFrame(t, map[string]string{":message-type": "event", ":event-type": string(rest)}, rest)...)
		}
	}
	return out
}

// Whatever Bedrock streams, the relay ends (io.EOF or an error carrying a
// JSON envelope) within a bounded number of calls, never panics, and writes
// only well-formed SSE events: a plain event name and one line of valid
// JSON. The raw bytes exercise the framing; fuzzFrames the chunks under it.
// go test runs the seeds.
func FuzzInvokeStream(f *testing.F) {
	f.Add([]byte{})
	var seq []byte
	for _, e := range []string{evStart, evPing, evBlock, evDelta, evBStop, evMDel, evStop} {
		seq = append(seq, chunkFrame(f, e)...)
	}
	f.Add(seq)
	f.Add(append(chunkFrame(f, evStart), exceptionFrame(f, "throttlingException", "slow")...))
	f.Add(seq[:len(seq)-3])
	f.Add([]byte("\x00" + evStart + "\x00\x00" + evDelta + "\x00\x00" + "{\n\"type\":\"message_stop\"}"))
	f.Add([]byte("\x00{\"type\":\"a\",\"type\":\"b\"}\x00\x01{\"bytes\":\"!!\"}\x00\x02throttlingException\x00\x03chunk"))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, stream := range [][]byte{in, fuzzFrames(t, in)} {
			frames, _, err := drain(t, stream, 16)
			if err != io.EOF {
				var se *StreamError
				if !errors.As(err, &se) {
					t.Fatalf("error %v", err)
				}
				if !json.Valid(se.Body) {
					t.Fatalf("envelope %q", se.Body)
				}
			}
			for _, fr := range frames {
				checkSSEEvents(t, fr)
			}
		}
	})
}

// checkSSEEvents fails t unless frame is one or more "event: <name>" and
// "data: <JSON>" pairs, each a single line.
func checkSSEEvents(t *testing.T, frame string) {
	t.Helper()
	if !strings.HasSuffix(frame, "\n\n") {
		t.Fatalf("frame %q", frame)
	}
	for _, ev := range strings.Split(strings.TrimSuffix(frame, "\n\n"), "\n\n") {
		lines := strings.Split(ev, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") ||
			!eventName([]byte(lines[0][len("event: "):])) || strings.ContainsRune(ev, '\r') ||
			!json.Valid([]byte(lines[1][len("data: "):])) {
			t.Fatalf("event %q", ev)
		}
	}
}

// Whatever the client's body and anthropic-beta header, the InvokeModel
// body is valid JSON holding the client's members other than model, stream
// and anthropic_beta, in order and byte for byte, then the ones the gateway
// adds: anthropic_version when absent, an anthropic_beta of accepted flags
// only, each once. go test runs the seeds.
func FuzzInvokeBody(f *testing.F) {
	f.Add([]byte(`{"model":"claude","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`), "interleaved-thinking-2025-05-14,claude-code-20250219")
	f.Add([]byte(`{"mod\u0065l":"c","anthropic_beta":["effort-2025-11-24","x"],"anthropic_version":"v","system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]}`), " effort-2025-11-24 ,, ")
	f.Add([]byte(`{}`), "")
	f.Add([]byte(`{"anthropic_beta":7}`), "a")
	f.Add([]byte(`[1,2]`), "a")
	f.Add([]byte(`{"a":1,"a":2,"stream":{"x":[1,{"model":2}]}}`), "context-1m-2025-08-07,context-1m-2025-08-07")
	f.Fuzz(func(t *testing.T, body []byte, beta string) {
		h := &fasthttp.RequestHeader{}
		h.Set("anthropic-beta", beta)
		for _, count := range []bool{false, true} {
			out, err := appendInvokeBody(nil, body, h, BedrockAnthropicBetas, count)
			if !json.Valid(body) || len(bytes.TrimSpace(body)) == 0 || bytes.TrimSpace(body)[0] != '{' {
				continue // the gateway validated the body before: only no panic here
			}
			if err != nil {
				var re *RequestError
				if !errors.As(err, &re) || !strings.Contains(re.Message, "anthropic_beta") {
					t.Fatalf("%s: %v", body, err)
				}
				continue
			}
			if !json.Valid(out) {
				t.Fatalf("invalid JSON %s from %s", out, body)
			}
			in, got := topMembers(t, body), topMembers(t, out)
			var kept []member
			hasVersion, hasMax := false, false
			for _, m := range in {
				switch m.key {
				case "model", "stream", "anthropic_beta":
					continue
				case "anthropic_version":
					hasVersion = true
				case "max_tokens":
					hasMax = true
				}
				kept = append(kept, m)
			}
			if len(got) < len(kept) {
				t.Fatalf("members lost: %s from %s", out, body)
			}
			for i, m := range kept {
				if got[i] != m {
					t.Fatalf("member %d %+v became %+v", i, m, got[i])
				}
			}
			extra := got[len(kept):]
			if !hasVersion {
				if len(extra) == 0 || extra[0] != (member{"anthropic_version", `"bedrock-2023-05-31"`}) {
					t.Fatalf("no anthropic_version added: %s", out)
				}
				extra = extra[1:]
			}
			if len(extra) > 0 && extra[0].key == "anthropic_beta" {
				var flags []string
				if err := json.Unmarshal([]byte(extra[0].raw), &flags); err != nil || len(flags) == 0 {
					t.Fatalf("anthropic_beta %s", extra[0].raw)
				}
				seen := map[string]bool{}
				for _, fl := range flags {
					if seen[fl] || !strings.Contains(strings.Join(BedrockAnthropicBetas, " ")+" ", fl+" ") {
						t.Fatalf("flag %q in %s", fl, out)
					}
					seen[fl] = true
				}
				extra = extra[1:]
			}
			if count && !hasMax {
				if len(extra) == 0 || extra[0] != (member{"max_tokens", "1"}) {
					t.Fatalf("no max_tokens added: %s", out)
				}
				extra = extra[1:]
			}
			if len(extra) != 0 {
				t.Fatalf("unexpected members %+v in %s", extra, out)
			}
		}
	})
}

type member struct{ key, raw string }

// topMembers lists an object's top-level members as encoding/json reads
// them: keys unescaped, values as written.
func topMembers(t *testing.T, b []byte) []member {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", b)
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		out = append(out, member{tok.(string), string(raw)})
	}
	return out
}
