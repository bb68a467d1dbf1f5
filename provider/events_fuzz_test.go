package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/switchyard/switchyard/provider/providertest"
)

// Whatever a Responses or Messages upstream streams, the named-event relay
// passes bytes of the input through unchanged, in order, and ends with
// io.EOF or an error with an envelope, never a panic or a hang.
// go test runs the seeds.
func FuzzEventDecoder(f *testing.F) {
	f.Add([]byte(providertest.MsgStart + providertest.MsgPing + providertest.MsgDelta + providertest.MsgStop))
	f.Add([]byte(providertest.MsgStart + providertest.AnthropicErrorEvent("overloaded_error", "x")))
	f.Add([]byte(providertest.RespCreated + providertest.RespDelta + providertest.RespCompleted))
	f.Add([]byte(providertest.RespFailed("server_error")))
	f.Add([]byte(providertest.RespError("invalid_request_error", "context_length_exceeded")))
	f.Add([]byte("data: {\"type\":\"message_stop\"}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: error\r\ndata: not json\r\n\r\n: comment\n\nevent:\ndata:\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, dec := range []StreamDecoder{responsesEvents, messagesEvents} {
			r := bufio.NewReaderSize(bytes.NewReader(in), 16)
			var out []byte
			for i := 0; ; i++ {
				if i > len(in)+1 {
					t.Fatalf("no end after %d frames", i)
				}
				frame, err := dec.Next(nil, r)
				out = append(out, frame...)
				if err == nil {
					if len(frame) == 0 {
						t.Fatalf("an empty frame without an error")
					}
					continue
				}
				var se *StreamError
				// An error body is the upstream's own data, as it came, or
				// an envelope the gateway made, valid JSON.
				if err != io.EOF && (!errors.As(err, &se) || !(json.Valid(se.Body) || bytes.Contains(in, se.Body))) {
					t.Fatalf("error %v", err)
				}
				break
			}
			if !bytes.Contains(in, out) && !isSubsequence(out, in) {
				t.Fatalf("relayed bytes not from the input:\n in  %q\n out %q", in, out)
			}
		}
	})
}

// isSubsequence reports whether every frame byte appears in in, in order
// (events without data are dropped between relayed ones).
func isSubsequence(sub, in []byte) bool {
	j := 0
	for i := 0; i < len(in) && j < len(sub); i++ {
		if in[i] == sub[j] {
			j++
		}
	}
	return j == len(sub)
}
