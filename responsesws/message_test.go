package responsesws

import (
	"bufio"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestParseMessage: what each message becomes, and the refusals, by
// their text.
func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		msg      string
		kind     kind
		generate bool
		previous string
		refusal  string
	}{
		{msg: `{"type":"response.create","model":"m","input":"hi"}`, generate: true},
		{msg: `{"type":"response.create","model":"m","generate":false}`},
		{msg: `{"type":"response.create","model":"m","previous_response_id":"resp_1","input":[]}`, generate: true, previous: "resp_1"},
		{msg: `{"type":"response.create","model":"m","previous_response_id":null,"stream_id":null,"background":false}`, generate: true},
		{msg: `{"type":"response.processed","response_id":"resp_1"}`, kind: kindProcessed, generate: true},
		{msg: `{"type":"response.create","model":`, refusal: "message is not valid JSON"},
		{msg: `"response.create"`, refusal: "message must be a JSON object"},
		{msg: `{"model":"m"}`, refusal: `message has no "type"`},
		{msg: `{"type":"response.append","input":[]}`, refusal: `message type "response.append" is not supported`},
		{msg: `{"type":"response.create","type":"response.processed"}`, refusal: `"type" is sent more than once`},
		{msg: `{"type":"response.create","Previous_Response_ID":"x"}`, refusal: `key "Previous_Response_ID" is not accepted; write it "previous_response_id"`},
		{msg: `{"type":"response.create","\u0069nput":"a","input":"b"}`, refusal: `"input" is sent more than once`},
		{msg: `{"type":"response.create","generate":"no"}`, refusal: `"generate" must be a boolean`},
		{msg: `{"type":"response.create","previous_response_id":7}`, refusal: `"previous_response_id" must be a string`},
		{msg: `{"type":"response.create","input":{"a":1}}`, refusal: `"input" must be a string or an array`},
		{msg: `{"type":"response.create","stream_id":"lane"}`, refusal: `"stream_id" (multiplexed responses) is not supported`},
		{msg: `{"type":"response.create","background":true}`, refusal: `"background" is not supported over WebSocket`},
	} {
		k, c, bad := parseMessage([]byte(tc.msg))
		if tc.refusal != "" {
			if bad == nil || !strings.Contains(bad.message, tc.refusal) || bad.status != 400 || bad.code != "invalid_request" {
				t.Errorf("%s: refusal %+v, want one saying %q", tc.msg, bad, tc.refusal)
			}
			continue
		}
		if bad != nil {
			t.Errorf("%s: refused: %s", tc.msg, bad.message)
			continue
		}
		if k != tc.kind || c.generate != tc.generate || c.previous != tc.previous || c.hasPrevious != (tc.previous != "") {
			t.Errorf("%s: kind %d generate %v previous %q", tc.msg, k, c.generate, c.previous)
		}
	}
}

// TestBody: the HTTP body keeps every member as sent (bytes, order,
// escapes), drops the socket's own members and stream, and adds
// "stream":true; expanded, input and previous_response_id give way to the
// items.
func TestBody(t *testing.T) {
	msg := `{ "type" : "response.create", "model":"m\u002d1", "stream": false, "generate":true,` +
		` "input" : [ {"role":"user","content":"a\"b"} ] , "tools":[{"type":"web_search"}],` +
		` "previous_response_id":"resp_9", "stream_id":null, "x":{"y":[1,2,{"z":"}"}]} }`
	_, c, bad := parseMessage([]byte(msg))
	if bad != nil {
		t.Fatal(bad.message)
	}
	got := string(c.body(nil, false, nil))
	want := `{"model":"m\u002d1","input":[ {"role":"user","content":"a\"b"} ],"tools":[{"type":"web_search"}],` +
		`"previous_response_id":"resp_9","x":{"y":[1,2,{"z":"}"}]},"stream":true}`
	if got != want {
		t.Errorf("body:\n%s\nwant:\n%s", got, want)
	}
	items := c.inputItems([]byte(`{"id":"old"}` + ","))
	got = string(c.body(nil, true, items))
	want = `{"model":"m\u002d1","tools":[{"type":"web_search"}],"x":{"y":[1,2,{"z":"}"}]},"stream":true,` +
		`"input":[{"id":"old"},{"role":"user","content":"a\"b"}]}`
	if got != want {
		t.Errorf("expanded body:\n%s\nwant:\n%s", got, want)
	}
	var v any
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Errorf("expanded body is not JSON: %v", err)
	}
}

// TestInputItems: a string input is the user message it stands for.
func TestInputItems(t *testing.T) {
	for msg, want := range map[string]string{
		`{"type":"response.create","input":"hi \"you\""}`: `{"type":"message","role":"user","content":"hi \"you\""}`,
		`{"type":"response.create","input":[ ]}`:          ``,
		`{"type":"response.create","input":[1, 2]}`:       `1, 2`,
		`{"type":"response.create"}`:                      ``,
	} {
		_, c, _ := parseMessage([]byte(msg))
		if got := string(c.inputItems(nil)); got != want {
			t.Errorf("%s: items %q, want %q", msg, got, want)
		}
	}
}

// TestMembersStopsOnBadBytes: the scanner never reads out of bounds, on
// truncated or broken documents (events come from upstreams).
func TestMembersStopsOnBadBytes(t *testing.T) {
	for _, doc := range []string{``, `{`, `{"a`, `{"a":`, `{"a":"`, `{"a":[1,`, `{"a":1,"b"`, `x`, `{"a":"\`, `{"type":"x"`} {
		members([]byte(doc), func(member) bool { return true })
		_ = lookup([]byte(doc), "type")
	}
	if got := string(lookup([]byte(`{"a":{"type":"no"},"type":"yes"}`), "type")); got != `"yes"` {
		t.Errorf("lookup found %s; it must read the top level only", got)
	}
}

// TestSSEReader: events as the data of their data lines, joined; names,
// comments and CRLF line ends handled; a line longer than the buffer read
// whole; an event over the bound refused.
func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	in := "event: a\ndata: {\"n\":1}\n\n: comment\r\ndata:{\"n\":\r\ndata: 2}\r\n\r\n\n\ndata: " + long + "\n\ndata: last"
	r := sseReader{r: bufio.NewReaderSize(strings.NewReader(in), 16), max: 1000}
	var got []string
	for {
		d, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(d))
	}
	want := []string{`{"n":1}`, "{\"n\":\n2}", long, "last"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	r = sseReader{r: bufio.NewReaderSize(strings.NewReader("data: "+long+"\n\n"), 16), max: 50}
	if _, err := r.next(); err != errTooLong {
		t.Errorf("an event over the bound: %v", err)
	}
}

// TestErrorEvent: the error event's shape, as Codex reads it.
func TestErrorEvent(t *testing.T) {
	r := &refusal{status: 429, typ: "rate_limit_error", code: "key_rate_limited", message: `slow "down"`,
		retryAfter: "3", ratelimitHdrs: [][2]string{{"x-ratelimit-limit-requests", "2"}}}
	got := string(appendError(nil, r, nil))
	want := `{"type":"error","status":429,"error":{"type":"rate_limit_error","code":"key_rate_limited","message":"slow \"down\"","param":null},` +
		`"headers":{"retry-after":"3","x-ratelimit-limit-requests":"2"}}`
	if got != want {
		t.Errorf("event:\n%s\nwant:\n%s", got, want)
	}
	got = string(appendError(nil, &refusal{status: 502}, []byte(`{"message":"m","type":"t","param":null,"code":"c"}`)))
	if want := `{"type":"error","status":502,"error":{"message":"m","type":"t","param":null,"code":"c"}}`; got != want {
		t.Errorf("relayed object:\n%s\nwant:\n%s", got, want)
	}
}
