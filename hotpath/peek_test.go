package hotpath

import (
	"strings"
	"testing"
)

func TestPeekAccepts(t *testing.T) {
	cases := []struct {
		name, body                string
		model, user               string
		hasUser, stream, hasTools bool
	}{
		{name: "minimal", body: `{"model":"gpt-4o"}`, model: "gpt-4o"},
		{name: "whitespace around", body: " \n\t{\"model\":\"m\"}\r\n ", model: "m"},
		{name: "all fields", body: `{"model":"m","user":"alice","stream":true,"tools":[{"type":"function"}]}`,
			model: "m", user: "alice", hasUser: true, stream: true, hasTools: true},
		{name: "stream false", body: `{"model":"m","stream":false}`, model: "m"},
		{name: "tools null", body: `{"model":"m","tools":null}`, model: "m"},
		{name: "tools empty", body: `{"model":"m","tools":[]}`, model: "m"},
		{name: "tools one empty object", body: `{"model":"m","tools":[{}]}`, model: "m", hasTools: true},
		{name: "empty user is a user", body: `{"model":"m","user":""}`, model: "m", hasUser: true},
		{name: "escaped model", body: `{"model":"gpt\u002d4o"}`, model: "gpt-4o"},
		{name: "escaped key", body: `{"mod\u0065l":"m"}`, model: "m"},
		{name: "inner grammar is the upstream's", body: `{"model":"m","messages":[{"role" "user",,"content":tru 01}],"x":{"a":[1 2]}}`, model: "m"},
		{name: "escaped backslash ends a string", body: `{"x":"a\\","model":"m"}`, model: "m"},
		{name: "brackets inside strings", body: `{"x":["]}{[\"]"],"model":"m"}`, model: "m"},
		{name: "upper-case keys that route nothing", body: `{"model":"m","MESSAGES":[],"Metadata":{"USER_ID":1}}`, model: "m"},
		{name: "surrogate pair", body: `{"model":"m\ud83d\ude00","user":"\u00e9"}`, model: "m\U0001F600", user: "é", hasUser: true},
		{name: "other fields ignored", body: `{"messages":[{"role":"user","content":"hi"}],"model":"m","n":2,"x":{"model":1}}`, model: "m"},
	}
	p := &peek{}
	for _, c := range cases {
		if err := p.parse([]byte(c.body), false); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(p.Model) != c.model || string(p.User) != c.user || p.HasUser != c.hasUser ||
			p.Stream != c.stream || p.HasTools != c.hasTools {
			t.Errorf("%s: got model=%q user=%q hasUser=%v stream=%v tools=%v", c.name,
				p.Model, p.User, p.HasUser, p.Stream, p.HasTools)
		}
	}
}

func TestPeekRefuses(t *testing.T) {
	cases := []struct{ name, body, msg string }{
		{"empty", ``, `request body is empty; want a JSON object with a "model" field`},
		{"whitespace only", "  ", `request body is not valid JSON`},
		{"trailing bytes", `{"model":"m"}x`, `request body is not valid JSON`},
		{"two objects", `{"model":"m"}{"model":"m"}`, `request body is not valid JSON`},
		{"array body", `[{"model":"m"}]`, `request body must be a JSON object, not an array`},
		{"string body", `"m"`, `request body must be a JSON object, not a string`},
		{"null body", `null`, `request body must be a JSON object, not null`},
		{"truncated", `{"model":"m"`, `request body is not valid JSON`},
		{"control char in model", "{\"model\":\"a\x01b\"}", `"model" must be a valid JSON string`},
		{"bad escape in model", `{"model":"a\qb"}`, `"model" must be a valid JSON string`},
		{"lone surrogate in model", `{"model":"a\ud800b"}`, `"model" must be a valid JSON string`},
		{"invalid UTF-8 in user", "{\"model\":\"m\",\"user\":\"\xff\"}", `"user" must be a valid JSON string`},
		{"unterminated string in a skipped value", `{"model":"m","messages":[{"content":"abc}]}`, `request body is not valid JSON: a string is not terminated`},
		{"escaped quote does not end a string", `{"model":"m","x":"a\"}`, `request body is not valid JSON`},
		{"brackets crossed", `{"model":"m","x":[{]}}`, `request body is not valid JSON: ']' at offset 19 does not close`},
		{"unclosed array", `{"model":"m","x":[[]}`, `request body is not valid JSON`},
		{"trailing comma", `{"model":"m",}`, `request body is not valid JSON: '}' at offset 13, where a key belongs`},
		{"missing value", `{"model":"m","x":}`, `request body is not valid JSON`},
		{"bad top-level scalar", `{"model":"m","x":tru}`, `request body is not valid JSON`},
		{"bad top-level number", `{"model":"m","x":01}`, `request body is not valid JSON`},
		{"missing colon", `{"model" "m"}`, `request body is not valid JSON`},
		{"missing comma", `{"model":"m" "x":1}`, `request body is not valid JSON`},
		{"key not a string", `{model:"m"}`, `request body is not valid JSON`},
		{"bad escape in a short key", `{"mo\del":"m"}`, `request body is not valid JSON: a key has an invalid escape`},
		{"stream misspelt literal", `{"model":"m","stream":tru}`, `request body is not valid JSON`},
		{"garbage body", `x`, `request body is not valid JSON`},
		{"model in upper case", `{"model":"cheap","MODEL":"premium"}`, `request body has the key "MODEL", which a case-insensitive JSON decoder reads as "model"`},
		{"upper case alone", `{"Model":"premium"}`, `request body has the key "Model"`},
		{"escaped upper case", `{"model":"cheap","\u004dodel":"premium"}`, `request body has the key "\\u004dodel"`},
		{"long s folds to s", `{"model":"m","ſtream":true}`, `request body has the key "ſtream", which a case-insensitive JSON decoder reads as "stream"`},
		{"user in upper case", `{"model":"m","user":"a","USER":"b"}`, `request body has the key "USER"`},
		{"tools in mixed case", `{"model":"m","TooLs":[1]}`, `request body has the key "TooLs"`},
		{"no model", `{"messages":[]}`, `request body has no "model"; it must name the model as a string`},
		{"model number", `{"model":4}`, `"model" must be a string, not a number`},
		{"model null", `{"model":null}`, `"model" must be a string, not null`},
		{"model empty", `{"model":""}`, `"model" must not be empty`},
		{"model twice", `{"model":"a","model":"b"}`, `request body has "model" twice`},
		{"model twice escaped", `{"model":"a","mod\u0065l":"b"}`, `request body has "model" twice`},
		{"stream as string", `{"model":"m","stream":"true"}`, `"stream" must be a boolean, not a string`},
		{"stream number", `{"model":"m","stream":1}`, `"stream" must be a boolean, not a number`},
		{"stream null", `{"model":"m","stream":null}`, `"stream" must be a boolean, not null`},
		{"user number", `{"model":"m","user":7}`, `"user" must be a string, not a number`},
		{"user object", `{"model":"m","user":{}}`, `"user" must be a string, not an object`},
		{"tools object", `{"model":"m","tools":{}}`, `"tools" must be an array, not an object`},
		{"tools string", `{"model":"m","tools":"x"}`, `"tools" must be an array, not a string`},
		{"tools true", `{"model":"m","tools":true}`, `"tools" must be an array, not a boolean`},
		{"stream twice", `{"model":"m","stream":false,"stream":true}`, `request body has "stream" twice`},
		{"nested too deep", `{"model":"m","x":` + strings.Repeat("[", 301) + strings.Repeat("]", 301) + `}`,
			`request body is not valid JSON: arrays and objects are nested more than 300 deep`},
		{"nested far too deep, unclosed", `{"model":"m","x":` + strings.Repeat(`{"a":[`, 1<<20),
			`request body is not valid JSON: arrays and objects are nested more than 300 deep`},
	}
	p := &peek{}
	for _, c := range cases {
		err := p.parse([]byte(c.body), false)
		if err == nil {
			t.Errorf("%s: accepted %q", c.name, c.body)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.msg) {
			t.Errorf("%s: error %q, want prefix %q", c.name, err, c.msg)
		}
	}
	// A failed parse leaves no stale state for the next one.
	if err := p.parse([]byte(`{"model":"z"}`), false); err != nil || string(p.Model) != "z" || p.Stream || p.HasUser {
		t.Fatalf("parse after errors: %v model=%q", err, p.Model)
	}
}

func FuzzPeek(f *testing.F) {
	for _, s := range []string{`{"model":"m"}`, `{"model":"m","stream":true,"tools":[1]}`, `[]`, `{"model":1}`, `{"model":"m"} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := &peek{}
		if err := p.parse(b, false); err == nil && len(p.Model) == 0 {
			t.Fatalf("accepted %q without a model", b)
		}
	})
}

// release drops what a request left in a pooled peek: slices into its body,
// and buffers a huge field grew; ordinary buffers stay for reuse.
func TestPeekRelease(t *testing.T) {
	p := &peek{}
	body := []byte(`{"model":"m","user":"` + strings.Repeat("u", 1<<20) + `","stream":true}`)
	if err := p.parse(body, false); err != nil || len(p.User) != 1<<20 {
		t.Fatalf("%v %d", err, len(p.User))
	}
	p.release()
	if p.Model != nil || p.User != nil || p.userBuf != nil || p.modelBuf != nil {
		t.Fatalf("after release: model %q, user %q, user buffer %d bytes", p.Model, p.User, cap(p.userBuf))
	}
	if err := p.parse([]byte(`{"model":"small","user":"u"}`), false); err != nil || string(p.Model) != "small" || string(p.User) != "u" {
		t.Fatalf("parse after release: %v %q %q", err, p.Model, p.User)
	}
	p.release()
	if cap(p.modelBuf) == 0 || cap(p.userBuf) == 0 {
		t.Fatal("small buffers dropped at release; want them kept for the next request")
	}
}

// On the messages surface the user is metadata.user_id, and a top-level
// "user" routes nothing (docs/api.md, The Responses API and the Anthropic Messages API).
func TestPeekMessagesMode(t *testing.T) {
	accepts := []struct {
		body, user string
		hasUser    bool
	}{
		{`{"model":"m"}`, "", false},
		{`{"model":"m","user":"ignored","USER":1}`, "", false},
		{`{"model":"m","metadata":null}`, "", false},
		{`{"model":"m","metadata":{}}`, "", false},
		{`{"model":"m","metadata":{"user_id":null}}`, "", false},
		{`{"model":"m","metadata":{"user_id":"acme-1","x":[1 2]}}`, "acme-1", true},
		{`{"model":"m","metadata":{"user_\u0069d":"a\u00e9"}}`, "aé", true},
	}
	p := &peek{}
	for _, c := range accepts {
		if err := p.parse([]byte(c.body), true); err != nil || string(p.User) != c.user || p.HasUser != c.hasUser {
			t.Errorf("%s: %v user=%q/%v, want %q/%v", c.body, err, p.User, p.HasUser, c.user, c.hasUser)
		}
	}
	refuses := []struct{ body, msg string }{
		{`{"model":"m","metadata":"u"}`, `"metadata" must be an object, not a string`},
		{`{"model":"m","metadata":[]}`, `"metadata" must be an object, not an array`},
		{`{"model":"m","metadata":{"user_id":7}}`, `"metadata.user_id" must be a string, not a number`},
		{`{"model":"m","metadata":{"user_id":"a","user_id":"b"}}`, `"metadata" has "user_id" twice`},
		{`{"model":"m","metadata":{"user_id":"a","USER_ID":"b"}}`, `"metadata" has the key "USER_ID", which a case-insensitive JSON decoder reads as "user_id"`},
		{`{"model":"m","metadata":{},"metadata":{"user_id":"b"}}`, `request body has "metadata" twice`},
		{`{"model":"m","Metadata":{"user_id":"b"}}`, `request body has the key "Metadata"`},
		{`{"model":"m","metadata":{"user_id":"a",}}`, `request body is not valid JSON`},
		{`{"model":"m","metadata":{"user_id":"\ud800"}}`, `"metadata.user_id" must be a valid JSON string`},
		{`{"model":"m","stream":1}`, `"stream" must be a boolean`},
	}
	for _, c := range refuses {
		err := p.parse([]byte(c.body), true)
		if err == nil || !strings.HasPrefix(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want prefix %q", c.body, err, c.msg)
		}
	}
	// The same bodies in chat mode: metadata is just another member.
	if err := p.parse([]byte(`{"model":"m","metadata":"u","Metadata":1,"user":"alice"}`), false); err != nil || string(p.User) != "alice" {
		t.Fatalf("chat mode: %v %q", err, p.User)
	}
}
