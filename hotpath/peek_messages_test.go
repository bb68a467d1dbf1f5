package hotpath

import (
	"strings"
	"testing"
)

// The contract of peek.parse(body, messages=true), a Messages API body
// (docs/api.md, The Responses API and the Anthropic Messages API): the user is metadata.user_id, and "user" routes nothing. Kept
// apart from peek_test.go so it runs against any implementation of parse.

func TestPeekMessagesUser(t *testing.T) {
	for _, c := range []struct {
		body    string
		user    string
		hasUser bool
	}{
		{`{"model":"m","metadata":{"user_id":"u1"}}`, "u1", true},
		{`{"metadata":{"a":1,"user_id":"u\u0032","b":[{"user_id":3}]},"model":"m"}`, "u2", true},
		{`{"model":"m","metadata":{"user\u005fid":"esc"}}`, "esc", true},
		{`{"model":"m","metadata":{"user_id":""}}`, "", true},
		{`{"model":"m"}`, "", false},
		{`{"model":"m","metadata":null}`, "", false},
		{`{"model":"m","metadata":{}}`, "", false},
		{`{"model":"m","metadata":{"user_id":null}}`, "", false},
		{`{"model":"m","metadata":{"other":"x"}}`, "", false},
		// "user" is not a routing field of a Messages body, whatever its type.
		{`{"model":"m","user":"not-this"}`, "", false},
		{`{"model":"m","user":1,"user":2,"metadata":{"user_id":"u"}}`, "u", true},
		// A nested user_id is not the metadata's.
		{`{"model":"m","system":{"metadata":{"user_id":"no"}}}`, "", false},
	} {
		var p peek
		if err := p.parse([]byte(c.body), true); err != nil {
			t.Errorf("%s: %v", c.body, err)
			continue
		}
		if p.HasUser != c.hasUser || string(p.User) != c.user {
			t.Errorf("%s: user %q/%v, want %q/%v", c.body, p.User, p.HasUser, c.user, c.hasUser)
		}
		if string(p.Model) != "m" {
			t.Errorf("%s: model %q", c.body, p.Model)
		}
	}
}

func TestPeekMessagesStreamAndTools(t *testing.T) {
	var p peek
	body := `{"model":"claude","stream":true,"tools":[{"name":"t"}],"metadata":{"user_id":"u"},"messages":[]}`
	if err := p.parse([]byte(body), true); err != nil {
		t.Fatal(err)
	}
	if !p.Stream || !p.HasTools || string(p.User) != "u" {
		t.Errorf("stream %v tools %v user %q", p.Stream, p.HasTools, p.User)
	}
	if err := p.parse([]byte(`{"model":"claude","tools":[]}`), true); err != nil || p.HasTools || p.Stream {
		t.Errorf("empty tools: %v tools %v stream %v", err, p.HasTools, p.Stream)
	}
}

func TestPeekMessagesRefused(t *testing.T) {
	// The texts are checked for the field they name only, so that any
	// implementation of the contract passes.
	for _, c := range []struct{ body, want string }{
		{`{"model":"m","metadata":"u"}`, `metadata`},
		{`{"model":"m","metadata":[]}`, `metadata`},
		{`{"model":"m","metadata":{"user_id":1}}`, `user_id`},
		{`{"model":"m","metadata":{"user_id":{}}}`, `user_id`},
		{`{"model":"m","metadata":{"user_id":"a","user_id":"b"}}`, `user_id`},
		{`{"model":"m","metadata":{"user_id":"a","user\u005fid":null}}`, `user_id`},
		{`{"model":"m","metadata":{},"metadata":{"user_id":"b"}}`, `metadata`},
		{`{"model":"m","metadata":null,"metad\u0061ta":null}`, `metadata`},
		{`{"model":"m","metadata":{"user_id":"a"}} x`, ``},
		{`{"model":"m","metadata":{"user_id":"a"}`, ``},
		{`{"metadata":{"user_id":"a"}}`, `model`},
		{`{"model":"m","stream":"yes"}`, `stream`},
	} {
		var p peek
		err := p.parse([]byte(c.body), true)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.body, err, c.want)
		}
	}
}

// Off the messages surface, "metadata" is an ordinary member (the
// Responses API has one too) and "user" is the user.
func TestPeekMetadataIsNotRoutedElsewhere(t *testing.T) {
	var p peek
	body := `{"model":"m","user":"u","metadata":{"user_id":1},"metadata":"twice is the upstream's business"}`
	if err := p.parse([]byte(body), false); err != nil {
		t.Fatal(err)
	}
	if string(p.User) != "u" || !p.HasUser {
		t.Errorf("user %q/%v", p.User, p.HasUser)
	}
}
