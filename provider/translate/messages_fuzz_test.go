package translate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// The translators read bytes from clients and upstreams: whatever they
// get, they must not panic, and whatever they write must be what the other
// side can read. Run: go test ./provider/translate -run '^$' -fuzz FuzzMessagesToChat
// (and FuzzMessagesStream, FuzzChatToMessages); the seeds here and in
// testdata/fuzz run with every go test.

var requestSeeds = []string{
	`{"model":"c","max_tokens":10,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"c","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"t1","name":"f","input":{"a":"\u00e9\"x"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]},{"type":"text","text":"more"}]}],` +
		`"tools":[{"name":"f","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},` +
		`"metadata":{"user_id":"u"},"stop_sequences":["x"],"temperature":1,"top_p":0.5,"stream":true}`,
	`{"model":"c","messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"},"title":"a\"b"},{"type":"document","source":{"type":"content","content":"x"}}]}]}`,
	`{"model":"c","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"\ud83d","content":null}]}]}`,
	`{"model":"c","messages":[{"role":"assistant","content":[{"type":"text","text":"a\u0000b"},{"type":"tool_use","id":"x","name":"y","input":{"k\"ey":[1,{"z":null}]}}]}]}`,
	// Control characters escaped in every string the translation copies.
	`{"model":"c","system":"\u0001","metadata":{"user_id":"\u0002"},"tools":[{"name":"\u0003","description":"\u0004"}],"messages":[` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"\u0005","content":"\u0006"},{"type":"text","text":"\u0007"}]}]}`,
}

func FuzzMessagesToChat(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, o := range []Options{{Model: []byte("m")}, {Model: []byte("m\"x"), MaxCompletionTokens: true, FileInput: true, Stream: true}} {
			out, _, err := MessagesToChat([]byte("prefix"), body, o)
			if !bytes.HasPrefix(out, []byte("prefix")) {
				t.Fatalf("dst not kept: %q", out)
			}
			if err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("a refusal that is not an *Error: %T %v", err, err)
				}
				continue
			}
			// Raw strings pass as they came: a valid body gives a valid
			// request (an invalid one is the upstream's to judge, as on a
			// native path).
			if !json.Valid(body) {
				continue
			}
			var req struct {
				Model    string            `json:"model"`
				Messages []json.RawMessage `json:"messages"`
			}
			if err := json.Unmarshal(out[len("prefix"):], &req); err != nil || req.Model != string(o.Model) {
				t.Fatalf("%s\n->\n%s\n%v", body, out, err)
			}
		}
	})
}

var answerSeeds = []string{
	`{"id":"\u0001","choices":[{"message":{"content":"\u0002","refusal":"\u0003","tool_calls":[{"id":"\u0004","function":{"name":"\u0005","arguments":"{}"}}]}}]}`,
	`{"id":"c","choices":[{"message":{"content":"hi","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":9}}}`,
	`{"id":"c\"d","choices":[{"message":{"content":[{"type":"text","text":"x"}],"refusal":"no"},"finish_reason":"content_filter"}],"usage":null}`,
	`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":" {\"a\":[1,2,{}]} "}}]}}]}`,
}

func FuzzChatToMessages(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, chat []byte) {
		out, err := ChatToMessages(nil, chat, []byte("claude-x"))
		if err != nil || !json.Valid(chat) {
			return
		}
		var msg anthropic.Message
		if err := json.Unmarshal(out, &msg); err != nil || !json.Valid(out) || msg.Type != "message" {
			t.Fatalf("%s\n->\n%s\n%v", chat, out, err)
		}
		for _, b := range msg.Content {
			if b.Type == "tool_use" && (len(b.Input) == 0 || b.Input[0] != '{' || !json.Valid(b.Input)) {
				t.Fatalf("tool_use input %q from %s", b.Input, chat)
			}
		}
	})
}

var streamSeeds = []string{
	chunk(`{"role":"assistant","content":""}`) + "\n" + chunk(`{"content":"a\u00e9"}`) + "\n" + finish("stop") + "\n" + usageChunk,
	chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\":"}}]}`) + "\n" +
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`) + "\n" +
		chunk(`{"content":"then text"}`) + "\n" +
		chunk(`{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{}"}}]}`) + "\n" + finish("tool_calls"),
	chunk(`{"content":"x","refusal":"r"}`) + "\n" + `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":3}}`,
}

// FuzzMessagesStream feeds chunks (the input's lines) and holds the
// translator to what a client reads: every event well formed, named as its
// type, and a stream that ends cleanly is one the Anthropic SDK builds a
// message from.
func FuzzMessagesStream(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := NewMessagesStream([]byte("claude-x"))
		var out []byte
		var err error
		valid := true
		for _, c := range bytes.Split(in, []byte("\n")) {
			valid = valid && json.Valid(c)
			if out, err = s.Chunk(out, c); err != nil {
				break
			}
		}
		if err == nil {
			out, err = s.Done(out)
		}
		if err != nil {
			out = s.Fail(out, 502, "upstream_error", "upstream_error", err.Error())
		}
		if !valid || len(out) == 0 {
			return
		}
		var msg anthropic.Message
		for _, ev := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
			name, data, ok := strings.Cut(ev, "\ndata: ")
			var u anthropic.MessageStreamEventUnion
			if !ok || !strings.HasPrefix(name, "event: ") || !json.Valid([]byte(data)) || json.Unmarshal([]byte(data), &u) != nil ||
				u.Type != strings.TrimPrefix(name, "event: ") {
				t.Fatalf("malformed event %q in\n%s", ev, out)
			}
			if aerr := msg.Accumulate(u); aerr != nil && err == nil {
				t.Fatalf("the SDK refuses %s: %v\n%s", data, aerr, out)
			}
		}
	})
}
