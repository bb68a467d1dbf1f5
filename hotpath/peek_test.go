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
		{"control char in string", "{\"model\":\"a\x01b\"}", `request body is not valid JSON`},
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
	if p.Model != nil || p.User != nil || p.nfields != 0 || p.fields[0].val != nil || p.userBuf != nil || p.modelBuf != nil {
		t.Fatalf("after release: model %q, %d fields, field 0 %q, user buffer %d bytes", p.Model, p.nfields, p.fields[0].val, cap(p.userBuf))
	}
	if err := p.parse([]byte(`{"model":"small","user":"u"}`), false); err != nil || string(p.Model) != "small" || string(p.User) != "u" {
		t.Fatalf("parse after release: %v %q %q", err, p.Model, p.User)
	}
	p.release()
	if cap(p.modelBuf) == 0 || cap(p.userBuf) == 0 {
		t.Fatal("small buffers dropped at release; want them kept for the next request")
	}
}
