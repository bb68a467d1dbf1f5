package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fuzz targets for the Responses translator: whatever the client sends or
// the upstream streams, the result is a clear error or valid output (for a
// request, from a valid body), never a panic. go test runs the seed corpus
// (every table case and fixture).

func FuzzResponsesToChat(f *testing.F) {
	for _, tc := range respRequestCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range respRefusedCases {
		f.Add([]byte(tc.in))
	}
	files, _ := filepath.Glob("testdata/responses/codex_*_turn.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, opt := range []Options{respClaude, {Model: []byte("m\x00\"<"), Stream: true, MaxCompletionTokens: true}} {
			out, dropped, err := ResponsesToChat([]byte("x"), body, opt)
			if err != nil {
				var te *Error
				if !errors.As(err, &te) || te.Status != 400 || te.Code == "" || te.Message == "" {
					t.Fatalf("error %v is not a 400 *Error", err)
				}
				if string(out) != "x" || dropped != nil {
					t.Fatalf("a refusal returned %q %q", out, dropped)
				}
				continue
			}
			// Strings pass as the client wrote them: a valid body gives a
			// valid request (an invalid one is the upstream's to judge, as
			// on a native path).
			if !json.Valid(body) {
				continue
			}
			var chat struct {
				Model    string
				Messages []json.RawMessage
			}
			if !json.Valid(out[1:]) || json.Unmarshal(out[1:], &chat) != nil {
				t.Fatalf("invalid chat JSON from %q:\n%s", body, out[1:])
			}
			if chat.Model != string(bytes.ToValidUTF8(opt.Model, []byte("\uFFFD"))) || len(chat.Messages) == 0 {
				t.Fatalf("model %q, %d messages from %q", chat.Model, len(chat.Messages), body)
			}
			for _, d := range dropped {
				if d == "" || strings.ContainsAny(d, "\r\n ,\"") {
					t.Fatalf("dropped name %q cannot go in a header", d)
				}
			}
		}
	})
}

// FuzzResponsesStream splits its input at new lines into chat chunks and
// checks that what the client gets is always well-framed events, numbered
// from 0, ending in exactly one terminal event.
func FuzzResponsesStream(f *testing.F) {
	f.Add([]byte(strings.Join([]string{
		respChunk(`{"role":"assistant","content":"Hi"}`, ""),
		respChunk(`{"tool_calls":[{"index":0,"id":"t","function":{"name":"a--b","arguments":"{"}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}`, ""),
		respChunk(`{"tool_calls":[{"index":1,"id":"u","function":{"name":"p--freeform","arguments":"{\"input\":\"x\"}"}}]}`, ""),
		respChunk(`{"refusal":"no"}`, "length"), respUsageChunk,
	}, "\n")))
	f.Add([]byte(respChunk(`{"tool_calls":[{"index":2,"id":"x"},{"index":1}]}`, "") + "\n" + `{"choices":[{"delta":{"content":"\ud800"}}]}`))
	f.Add([]byte(`{"error":{"message":"boom"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		s := NewResponsesStream([]byte("m"))
		var out []byte
		var err error
		for _, c := range bytes.Split(in, []byte("\n")) {
			if out, err = s.Chunk(out, c); err != nil {
				break
			}
		}
		if err != nil {
			out = s.Fail(out, 502, "upstream_error", "upstream_error", err.Error())
		} else if out, err = s.Done(out); err != nil {
			t.Fatal(err)
		}
		frames := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
		terminal := 0
		for i, fr := range frames {
			name, data, ok := strings.Cut(fr, "\ndata: ")
			var ev struct {
				Type string
				Seq  *int64 `json:"sequence_number"`
			}
			if !ok || json.Unmarshal([]byte(data), &ev) != nil || name != "event: "+ev.Type || ev.Seq == nil || *ev.Seq != int64(i) {
				t.Fatalf("frame %d malformed: %q\nfrom %q", i, fr, in)
			}
			switch ev.Type {
			case "response.completed", "response.incomplete", "response.failed":
				terminal++
			}
		}
		if terminal != 1 {
			t.Fatalf("%d terminal events from %q", terminal, in)
		}
	})
}
