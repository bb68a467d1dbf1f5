package hotpath

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/telemetry"
)

// digestOf is the sha256: value of a client key.
func digestOf(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// authYAML: rules vip → a, tier gold → b, fallback c. Keys: acme (user
// acme), gold (tier gold, only gpt-*), open (nothing bound), written once
// as a digest and once as a key.
var authYAML = `
strategy:
  mode: conditional
  conditions:
    - {key: user, value: vip, target_key: a}
    - {key: metadata, field: tier, value: gold, target_key: b}
targets:
  - {virtual_key: c, provider: openai, base_url: "{{c}}"}
  - {virtual_key: a, provider: openai, base_url: "{{a}}"}
  - {virtual_key: b, provider: openai, base_url: "{{b}}", models: [gpt-4o, other]}
auth:
  keys:
    - {name: acme, sha256: ` + digestOf("sy-acme") + `, user: acme}
    - {name: gold, key: sy-gold, metadata: {tier: gold}, models: ["gpt-*"]}
    - {name: open, sha256: "` + strings.ToUpper(digestOf("sy-open")) + `"}
`

func startAuthGateway(t *testing.T) (*testGateway, [3]*mockUpstream) {
	t.Helper()
	c, a, b := startMock(t, "c"), startMock(t, "a"), startMock(t, "b")
	return startGateway(t, authYAML, c, a, b), [3]*mockUpstream{c, a, b}
}

func calls(ms [3]*mockUpstream) [3]int64 {
	return [3]int64{ms[0].calls.Load(), ms[1].calls.Load(), ms[2].calls.Load()}
}

const authChatBody = `{"model":"gpt-4o","messages":[]}`

func TestAuthRefusesMissingAndUnknownKeys(t *testing.T) {
	tg, ms := startAuthGateway(t)
	invalid := func(msg string) string { return envelope(msg, "invalid_request_error", "invalid_api_key") }
	for _, c := range []struct {
		name string
		hdr  []string
		want string
	}{
		{"no header", nil, invalid("no client key; send it as Authorization: Bearer <key> or x-api-key: <key>")},
		{"empty bearer", []string{"Authorization", "Bearer "}, invalid("no client key; send it as Authorization: Bearer <key> or x-api-key: <key>")},
		{"unknown bearer", []string{"Authorization", "Bearer sy-nobody"}, invalid("the client key is not valid")},
		{"unknown x-api-key", []string{"x-api-key", "sy-nobody"}, invalid("the client key is not valid")},
		{"basic scheme", []string{"Authorization", "Basic c3ktYWNtZQ=="}, invalid(`the Authorization header is not "Bearer <key>"; send the client key as Authorization: Bearer <key> or x-api-key: <key>`)},
		{"digest as key", []string{"Authorization", "Bearer " + digestOf("sy-acme")}, invalid("the client key is not valid")},
	} {
		r := tg.do("POST", "/v1/chat/completions", authChatBody, c.hdr...)
		if r.Status != 401 || r.Body != c.want {
			t.Errorf("%s: %d %s; want 401 %s", c.name, r.Status, r.Body, c.want)
		}
		if r.Header["Www-Authenticate"] == "" {
			t.Errorf("%s: no WWW-Authenticate", c.name)
		}
		if strings.Contains(r.Body, "sy-") {
			t.Errorf("%s: the answer quotes the key: %s", c.name, r.Body)
		}
	}
	if r := tg.do("GET", "/v1/models", ""); r.Status != 401 {
		t.Errorf("/v1/models without a key: %d %s", r.Status, r.Body)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := tg.do("GET", p, ""); r.Status != 200 {
			t.Errorf("%s without a key: %d; want 200 (open)", p, r.Status)
		}
	}
	if got := calls(ms); got != [3]int64{} {
		t.Errorf("upstream calls %v; want none", got)
	}
}

func TestAuthAcceptsBothHeaderForms(t *testing.T) {
	tg, ms := startAuthGateway(t)
	for _, hdr := range [][]string{
		{"Authorization", "Bearer sy-open"},
		{"Authorization", "bearer   sy-open"},
		{"x-api-key", "sy-open"},
		{"X-API-KEY", "sy-open"},
		{"Authorization", "Bearer sy-open", "x-api-key", "sy-open"},
	} {
		if r := tg.do("POST", "/v1/chat/completions", authChatBody, hdr...); r.Status != 200 || r.Header["X-Gateway-Target"] != "c" {
			t.Errorf("%q: %d %s", hdr, r.Status, r.Body)
		}
	}
	if got := calls(ms); got != [3]int64{5, 0, 0} {
		t.Errorf("calls %v", got)
	}
}

func TestAuthRefusesRepeatedOrConflictingKeyHeaders(t *testing.T) {
	tg, ms := startAuthGateway(t)
	for _, c := range []struct {
		name string
		hdr  [][2]string
		want string
	}{
		{"two Authorization", [][2]string{{"Authorization", "Bearer sy-open"}, {"Authorization", "Bearer sy-acme"}},
			"the Authorization or x-api-key header is repeated; send the client key once"},
		{"same Authorization twice", [][2]string{{"Authorization", "Bearer sy-open"}, {"Authorization", "Bearer sy-open"}},
			"the Authorization or x-api-key header is repeated; send the client key once"},
		{"two x-api-key", [][2]string{{"x-api-key", ""}, {"x-api-key", "sy-open"}},
			"the Authorization or x-api-key header is repeated; send the client key once"},
		{"different keys", [][2]string{{"Authorization", "Bearer sy-open"}, {"x-api-key", "sy-gold"}},
			"the Authorization and x-api-key headers carry different keys; send one client key"},
	} {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		req.Header.SetMethod("POST")
		req.SetRequestURI("http://gateway/v1/chat/completions")
		req.SetBodyString(authChatBody)
		for _, h := range c.hdr {
			req.Header.Add(h[0], h[1])
		}
		if err := tg.client.Do(req, resp); err != nil {
			t.Fatal(err)
		}
		if want := envelope(c.want, "invalid_request_error", "invalid_request"); resp.StatusCode() != 400 || string(resp.Body()) != want {
			t.Errorf("%s: %d %s; want 400 %s", c.name, resp.StatusCode(), resp.Body(), want)
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
	if got := calls(ms); got != [3]int64{} {
		t.Errorf("upstream calls %v; want none", got)
	}
}

func TestAuthBindingsDecideTheRule(t *testing.T) {
	tg, ms := startAuthGateway(t)
	cases := []struct {
		key, body, meta string
		status          int
		rule, target    string
	}{
		// acme is bound to user acme: claiming vip does not reach a.
		{"sy-acme", `{"model":"gpt-4o","user":"vip"}`, "", 200, "fallback", "c"},
		// but acme's clients may still claim tier gold (unbound: lint warns).
		{"sy-acme", `{"model":"gpt-4o","user":"vip"}`, `{"tier":"gold"}`, 200, "1", "b"},
		// gold is bound to tier gold: no header needed, and a header claiming
		// another tier is overridden; other header entries still count.
		{"sy-gold", `{"model":"gpt-4o"}`, "", 200, "1", "b"},
		{"sy-gold", `{"model":"gpt-4o"}`, `{"tier":"silver","x":"y"}`, 200, "1", "b"},
		// gold's user is unbound: vip in the body wins (rule 0 before 1).
		{"sy-gold", `{"model":"gpt-4o","user":"vip"}`, "", 200, "0", "a"},
		// open binds nothing: the client's claims decide, as without auth.
		{"sy-open", `{"model":"gpt-4o","user":"vip"}`, "", 200, "0", "a"},
		{"sy-open", `{"model":"gpt-4o"}`, `{"tier":"gold"}`, 200, "1", "b"},
		{"sy-open", `{"model":"gpt-4o"}`, "", 200, "fallback", "c"},
	}
	for _, c := range cases {
		hdr := []string{"Authorization", "Bearer " + c.key}
		if c.meta != "" {
			hdr = append(hdr, "X-Gateway-Metadata", c.meta)
		}
		r := tg.do("POST", "/v1/chat/completions", c.body, hdr...)
		if r.Status != c.status || r.Header["X-Gateway-Rule"] != c.rule || r.Header["X-Gateway-Target"] != c.target {
			t.Errorf("%s %s %s: %d rule %q target %q; want %d %s %s: %s", c.key, c.body, c.meta,
				r.Status, r.Header["X-Gateway-Rule"], r.Header["X-Gateway-Target"], c.status, c.rule, c.target, r.Body)
		}
	}
	// The body is forwarded as sent, not rewritten with the bound user.
	if got := ms[0].requests()[0].Body; got != `{"model":"gpt-4o","user":"vip"}` {
		t.Errorf("body upstream %s", got)
	}
}

func TestAuthAllowList(t *testing.T) {
	tg, ms := startAuthGateway(t)
	want := envelope(`model "claude-3" is not allowed for this client key`, "invalid_request_error", "model_not_allowed")
	// Refused whether or not the model would route (b does not serve it).
	for _, model := range []string{"claude-3", "other"} {
		r := tg.do("POST", "/v1/chat/completions", `{"model":"`+model+`"}`, "x-api-key", "sy-gold")
		if w := strings.ReplaceAll(want, "claude-3", model); r.Status != 403 || r.Body != w {
			t.Errorf("%s: %d %s; want 403 %s", model, r.Status, r.Body, w)
		}
	}
	if r := tg.do("POST", "/v1/chat/completions", `{"model":"gpt-4o-mini"}`, "x-api-key", "sy-gold"); r.Status != 404 {
		t.Errorf("allowed model b does not serve: %d %s; want 404 (routed, not refused)", r.Status, r.Body)
	}
	if got := calls(ms); got != [3]int64{} {
		t.Errorf("upstream calls %v; want none", got)
	}
}

func TestAuthModelsPerKey(t *testing.T) {
	tg, _ := startAuthGateway(t)
	list := func(hdr ...string) string {
		r := tg.do("GET", "/v1/models", "", hdr...)
		if r.Status != 200 {
			t.Fatalf("%q: %d %s", hdr, r.Status, r.Body)
		}
		var ids []string
		for _, part := range strings.Split(r.Body, `"id":"`)[1:] {
			ids = append(ids, part[:strings.IndexByte(part, '"')])
		}
		return strings.Join(ids, ",")
	}
	// The candidates are b's gpt-4o and other. gold routes to b (tier
	// gold), which serves both; its allow-list keeps gpt-4o. The others
	// route bare requests to c, which serves any model.
	if got := list("x-api-key", "sy-gold"); got != "gpt-4o" {
		t.Errorf("gold lists %q; want gpt-4o", got)
	}
	if got := list("x-api-key", "sy-open"); got != "gpt-4o,other" {
		t.Errorf("open lists %q; want gpt-4o,other", got)
	}
}

func TestAuthRecordsTheKeyName(t *testing.T) {
	tg, _ := startAuthGateway(t)
	got := make(chan telemetry.Entry, 8)
	tg.g.Finished = func(e *telemetry.Entry) { got <- *e }
	tg.do("POST", "/v1/chat/completions", authChatBody, "x-api-key", "sy-acme")
	tg.do("POST", "/v1/chat/completions", `{"model":"claude"}`, "x-api-key", "sy-gold")
	tg.do("POST", "/v1/chat/completions", authChatBody, "x-api-key", "sy-who")
	for _, want := range []struct {
		key    string
		status int
	}{{"acme", 200}, {"gold", 403}, {"", 401}} {
		e := <-got
		if e.Key != want.key || e.Status != want.status {
			t.Errorf("record key %q status %d; want %q %d", e.Key, e.Status, want.key, want.status)
		}
	}
}

func TestAuthReloadRevokesKeys(t *testing.T) {
	tg, ms := startAuthGateway(t)
	if r := tg.do("POST", "/v1/chat/completions", authChatBody, "x-api-key", "sy-acme"); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	tg.reload(strings.Replace(authYAML, "    - {name: acme, sha256: "+digestOf("sy-acme")+", user: acme}\n", "", 1), ms[0], ms[1], ms[2])
	if r := tg.do("POST", "/v1/chat/completions", authChatBody, "x-api-key", "sy-acme"); r.Status != 401 {
		t.Errorf("revoked key: %d %s; want 401", r.Status, r.Body)
	}
	if r := tg.do("POST", "/v1/chat/completions", authChatBody, "x-api-key", "sy-open"); r.Status != 200 {
		t.Errorf("kept key: %d %s", r.Status, r.Body)
	}
	if got := calls(ms); got != [3]int64{2, 0, 0} {
		t.Errorf("calls %v", got)
	}
}

func TestBearerToken(t *testing.T) {
	for _, c := range []struct {
		in, tok string
		ok      bool
	}{
		{"Bearer abc", "abc", true},
		{"BEARER\tabc ", "abc", true},
		{"Bearer", "", true},
		{"Bearerabc", "", false},
		{"Basic abc", "", false},
		{"", "", false},
	} {
		tok, ok := bearerToken([]byte(c.in))
		if string(tok) != c.tok || ok != c.ok {
			t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", c.in, tok, ok, c.tok, c.ok)
		}
	}
}

// TestAuthIgnoresTrailers: a key sent in a chunked body's trailer is not
// a key (only the header section authenticates), with request bodies
// streamed or read whole by fasthttp (server.reduce_memory_usage).
func TestAuthIgnoresTrailers(t *testing.T) {
	for _, reduce := range []bool{false, true} {
		c, a, b := startMock(t, "c"), startMock(t, "a"), startMock(t, "b")
		yaml := authYAML
		if reduce {
			yaml = "server: {reduce_memory_usage: true}\n" + yaml
		}
		tg := startGateway(t, yaml, c, a, b)
		send := func(header, trailer string) string {
			conn, err := netDial(tg.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := `{"model":"gpt-4o"}`
			req := "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + header +
				"Transfer-Encoding: chunked\r\n\r\n" + strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n" + trailer + "\r\n"
			if _, err := conn.Write([]byte(req)); err != nil {
				t.Fatal(err)
			}
			line, err := bufioReader(conn).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(line)
		}
		if got := send("", "x-api-key: sy-open\r\n"); got != "HTTP/1.1 401 Unauthorized" {
			t.Errorf("reduce %v: key in the trailer only: %s; want 401", reduce, got)
		}
		if got := send("Trailer: x-api-key\r\n", "x-api-key: sy-open\r\n"); got != "HTTP/1.1 401 Unauthorized" {
			t.Errorf("reduce %v: announced trailer key: %s; want 401", reduce, got)
		}
		// With a valid key, the trailer itself is refused (400).
		if got := send("x-api-key: sy-open\r\n", "x-api-key: sy-gold\r\n"); got != "HTTP/1.1 400 Bad Request" {
			t.Errorf("reduce %v: key in the header, another in the trailer: %s; want 400", reduce, got)
		}
		if n := c.calls.Load() + a.calls.Load() + b.calls.Load(); n != 0 {
			t.Errorf("reduce %v: %d upstream calls; want 0", reduce, n)
		}
	}
}

// TestAuthMessagesEnvelope: on the messages surface the key checks answer
// in Anthropic's envelope (authentication_error, permission_error), and
// GET /v1/models stays in OpenAI's.
func TestAuthMessagesEnvelope(t *testing.T) {
	tg, ms := startAuthGateway(t)
	body := `{"model":"claude-3","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	if r := tg.do("POST", "/v1/messages", body); r.Status != 401 ||
		r.Body != `{"type":"error","error":{"type":"authentication_error","message":"no client key; send it as Authorization: Bearer \u003ckey\u003e or x-api-key: \u003ckey\u003e"}}` {
		t.Errorf("401: %d %s", r.Status, r.Body)
	}
	if r := tg.do("POST", "/v1/messages", body, "x-api-key", "sy-gold"); r.Status != 403 ||
		r.Body != `{"type":"error","error":{"type":"permission_error","message":"model \"claude-3\" is not allowed for this client key"}}` {
		t.Errorf("403: %d %s", r.Status, r.Body)
	}
	if r := tg.do("GET", "/v1/models", ""); r.Status != 401 ||
		r.Body != envelope("no client key; send it as Authorization: Bearer <key> or x-api-key: <key>", "invalid_request_error", "invalid_api_key") {
		t.Errorf("/v1/models: %d %s", r.Status, r.Body)
	}
	if got := calls(ms); got != [3]int64{} {
		t.Errorf("upstream calls %v", got)
	}
}

// TestAuthCarriedCheckFollowsReload: the key is checked on the State the
// request routes on: a key a reload revokes while the request's body is in
// flight is refused, whether the body is streamed to the handler or read
// whole before it (server.reduce_memory_usage).
func TestAuthCarriedCheckFollowsReload(t *testing.T) {
	revoked := strings.Replace(authYAML, `    - {name: open, sha256: "`+strings.ToUpper(digestOf("sy-open"))+`"}`+"\n", "", 1)
	if revoked == authYAML {
		t.Fatal("the open key is not in authYAML")
	}
	for _, reduce := range []bool{false, true} {
		c, a, b := startMock(t, "c"), startMock(t, "a"), startMock(t, "b")
		prefix := ""
		if reduce {
			prefix = "server: {reduce_memory_usage: true}\n"
		}
		tg := startGateway(t, prefix+authYAML, c, a, b)
		send := func(then string) string {
			t.Helper()
			conn, err := netDial(tg.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := `{"model":"gpt-4o"}`
			head := "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
				"x-api-key: sy-open\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
			if _, err := conn.Write([]byte(head + body[:1])); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // the header section is in and checked
			tg.reload(prefix+then, c, a, b)
			if _, err := conn.Write([]byte(body[1:])); err != nil {
				t.Fatal(err)
			}
			line, err := bufioReader(conn).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(line)
		}
		if got := send(revoked); got != "HTTP/1.1 401 Unauthorized" {
			t.Errorf("reduce %v: key revoked while the body was in flight: %s; want 401", reduce, got)
		}
	}
}
