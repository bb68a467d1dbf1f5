package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/switchyard/switchyard/audit"
)

const socketKey = "sy-socket-client-key-0123456789abcdef"

// socketConfig: model m-a goes to [a], m-b to [b], m-ab to [a, b]; c is
// the fallback, outside every rule. One client key, allowed m-* only.
func socketConfig(a, b, c *respUpstream, server, extra string) string {
	if server == "" {
		server = "{shutdown_timeout: 10s}"
	}
	return fmt.Sprintf(`
server: %s
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m-a, target_key: a}
    - {key: model, value: m-b, target_key: b}
    - {key: model, value: m-ab, target_keys: [a, b]}
targets:
  - {virtual_key: c, provider: openai, base_url: %q, api_key: sk-c, models: ["c-*"]}
  - {virtual_key: a, provider: openai, base_url: %q, api_key: sk-a}
  - {virtual_key: b, provider: openai, base_url: %q, api_key: sk-b}
auth:
  keys:
    - {name: coder, key: %s, models: ["m-*", "x-*"]}
%s`, server, c.base(), a.base(), b.base(), socketKey, extra)
}

// startSocketGateway starts three upstreams and a daemon serving
// socketConfig(extra).
func startSocketGateway(t *testing.T, server, extra string) (a, b, c *respUpstream, d *Daemon, base string, logs *syncBuffer) {
	t.Helper()
	a, b, c = startRespUpstream(t, "a"), startRespUpstream(t, "b"), startRespUpstream(t, "c")
	path := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, path, socketConfig(a, b, c, server, extra))
	logs = &syncBuffer{}
	d, base = startDaemon(t, path, logs)
	return a, b, c, d, base, logs
}

// TestSocketRoutesEachResponse: three response.create on one socket, each
// routed by its own model; only the members of each chain are called,
// the events come back as the upstream's SSE data, one message each, and
// the target's key (never the client's) goes upstream.
func TestSocketRoutesEachResponse(t *testing.T) {
	a, b, c, _, base, logs := startSocketGateway(t, "", "")
	ws := dialSocket(t, base, socketKey)
	for i, model := range []string{"m-a", "m-b", "m-a"} {
		send(t, ws, create(model, "", userItem("hi")))
		got := readResponse(t, ws)
		want := []string{"response.created", "response.output_item.added", "response.output_text.delta", "response.output_item.done", "response.completed"}
		if !reflect.DeepEqual(types(got), want) {
			t.Fatalf("response %d: events %v, want %v", i, types(got), want)
		}
		wantID := fmt.Sprintf("resp_%s_%d", model[2:], map[int]int{0: 0, 1: 0, 2: 1}[i])
		if id := got[4].responseID(); id != wantID {
			t.Errorf("response %d: id %q, want %q", i, id, wantID)
		}
	}
	if a.calls() != 2 || b.calls() != 1 || c.calls() != 0 {
		t.Fatalf("calls a=%d b=%d c=%d, want 2 1 0", a.calls(), b.calls(), c.calls())
	}
	if a.auths[0] != "Bearer sk-a" || b.auths[0] != "Bearer sk-b" {
		t.Errorf("upstream credentials %q %q", a.auths[0], b.auths[0])
	}
	body := a.body(t, 0)
	if body["stream"] != true || body["type"] != nil || body["model"] != "m-a" {
		t.Errorf("bridged body: %v", body)
	}
	// One access line per response, each on the responses surface. A
	// stream's line is written when its writer ends, which may be just
	// after the client read the last event.
	waitFor(t, 5*time.Second, "three access lines", func() bool {
		return strings.Count(logs.String(), `"surface":"responses"`) >= 3
	})
	if n := strings.Count(logs.String(), `"surface":"responses"`); n != 3 {
		t.Errorf("%d access lines on responses, want 3:\n%s", n, logs)
	}
	if strings.Contains(logs.String(), socketKey) {
		t.Error("the client key reached the log")
	}
}

// TestSocketContinuationSendsWholeInput: a continuation naming the
// socket's last response, with only the new items, reaches a native
// member with the whole input: the earlier input, the earlier output
// items, then the new ones; no previous_response_id.
func TestSocketContinuationSendsWholeInput(t *testing.T) {
	a, _, _, _, base, _ := startSocketGateway(t, "", "")
	ws := dialSocket(t, base, socketKey)
	send(t, ws, create("m-a", "", userItem("first")))
	first := readResponse(t, ws)
	id := first[len(first)-1].responseID()
	send(t, ws, create("m-a", fmt.Sprintf(`,"previous_response_id":%q`, id), userItem("second")))
	if got := types(readResponse(t, ws)); got[len(got)-1] != "response.completed" {
		t.Fatalf("continuation: %v", got)
	}
	body := a.body(t, 1)
	if _, ok := body["previous_response_id"]; ok {
		t.Errorf("previous_response_id was sent: %v", body)
	}
	input, _ := json.Marshal(body["input"])
	want := "[" + userItem("first") + "," +
		`{"id":"msg_a_0","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"answer from a","annotations":[]}]}` +
		"," + userItem("second") + "]"
	if !jsonEqual(t, string(input), want) {
		t.Errorf("input sent:\n%s\nwant:\n%s", input, want)
	}
}

// TestSocketWarmupThenContinuation: generate: false is answered by the
// gateway (response.created, response.completed, no upstream call) and
// becomes the last response: continuing from it sends its input and the
// new items.
func TestSocketWarmupThenContinuation(t *testing.T) {
	a, b, c, _, base, _ := startSocketGateway(t, "", "")
	ws := dialSocket(t, base, socketKey)
	send(t, ws, create("m-a", `,"generate":false`, userItem("setup")))
	warm := readResponse(t, ws)
	if got := types(warm); !reflect.DeepEqual(got, []string{"response.created", "response.completed"}) {
		t.Fatalf("warm-up events %v", got)
	}
	if n := a.calls() + b.calls() + c.calls(); n != 0 {
		t.Fatalf("the warm-up made %d upstream calls", n)
	}
	id := warm[1].responseID()
	if !strings.HasPrefix(id, "resp_") || warm[0].responseID() != id {
		t.Fatalf("warm-up ids %q %q", warm[0].responseID(), id)
	}
	send(t, ws, create("m-a", fmt.Sprintf(`,"previous_response_id":%q`, id), userItem("go")))
	readResponse(t, ws)
	input, _ := json.Marshal(a.body(t, 0)["input"])
	if want := "[" + userItem("setup") + "," + userItem("go") + "]"; !jsonEqual(t, string(input), want) {
		t.Errorf("input sent %s, want %s", input, want)
	}
}

// TestSocketRefusalsKeepTheSocket: a malformed message, an unknown type, a
// duplicated key, a model outside the key's allow-list and a model no
// rule serves each get an error event carrying the HTTP answer's status
// and code; the socket stays open and serves the next response.
// response.processed gets no answer.
func TestSocketRefusalsKeepTheSocket(t *testing.T) {
	a, _, c, _, base, _ := startSocketGateway(t, "", "")
	ws := dialSocket(t, base, socketKey)
	for _, tc := range []struct {
		msg    string
		code   string
		status int
	}{
		{`{"type":"response.create","model":`, "invalid_request", 400},
		{`[1,2]`, "invalid_request", 400},
		{`{"type":"response.cancel"}`, "invalid_request", 400},
		{`{"type":"response.create","model":"m-a","input":[],"Input":[]}`, "invalid_request", 400},
		{`{"type":"response.create","model":"m-a","stream_id":"lane-1"}`, "invalid_request", 400},
		{create("gpt-4o", ""), "model_not_allowed", 403},
		{create("x-unrouted", ""), "model_not_found", 404},
		{`{"type":"response.create","input":"hi"}`, "invalid_request", 400},
	} {
		send(t, ws, `{"type":"response.processed","response_id":"resp_x"}`)
		send(t, ws, tc.msg)
		e := readEvent(t, ws)
		code, status := e.errorCode()
		if e.typ() != "error" || code != tc.code || status != tc.status {
			t.Errorf("%s: got %v, want error %s %d", tc.msg, e, tc.code, tc.status)
		}
	}
	if c.calls() != 0 || a.calls() != 0 {
		t.Fatalf("refused messages reached upstreams: a=%d c=%d", a.calls(), c.calls())
	}
	send(t, ws, create("m-a", "", userItem("still here")))
	if got := types(readResponse(t, ws)); got[len(got)-1] != "response.completed" {
		t.Fatalf("after the refusals: %v", got)
	}
}

// TestSocketUpgradeRefusals: a missing or wrong client key, or a bad
// X-Gateway-Metadata header, is answered before the upgrade in OpenAI's
// envelope; no socket opens.
func TestSocketUpgradeRefusals(t *testing.T) {
	_, _, _, _, base, _ := startSocketGateway(t, "", "")
	for _, tc := range []struct {
		name   string
		header http.Header
		status int
		code   string
	}{
		{"no key", http.Header{}, 401, "invalid_api_key"},
		{"wrong key", http.Header{"Authorization": {"Bearer sy-not-a-key"}}, 401, "invalid_api_key"},
		{"bad metadata", http.Header{"Authorization": {"Bearer " + socketKey}, "X-Gateway-Metadata": {"[1]"}}, 400, "invalid_request"},
	} {
		c, resp, err := websocket.DefaultDialer.Dial(socketURL(base), tc.header)
		if err == nil {
			c.Close()
			t.Errorf("%s: the socket opened", tc.name)
			continue
		}
		if resp == nil || resp.StatusCode != tc.status {
			t.Errorf("%s: %v %v, want %d", tc.name, err, resp, tc.status)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		var env struct {
			Error struct{ Code string } `json:"error"`
		}
		if json.Unmarshal(b, &env) != nil || env.Error.Code != tc.code {
			t.Errorf("%s: body %s, want code %s", tc.name, b, tc.code)
		}
	}
	// A plain GET is still 405.
	resp, err := http.Get(base + "/v1/responses")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("GET without upgrade: %d, want 405", resp.StatusCode)
	}
}

// TestSocketOversizeMessage: a message over max_message_bytes is answered
// with a 413 error event and the socket closes with 1009 (the rest of the
// message is not read).
func TestSocketOversizeMessage(t *testing.T) {
	a, _, _, _, base, _ := startSocketGateway(t, "{websocket: {max_message_bytes: 1024}}", "")
	ws := dialSocket(t, base, socketKey)
	send(t, ws, create("m-a", "", userItem(strings.Repeat("x", 1024))))
	e := readEvent(t, ws)
	if code, status := e.errorCode(); code != "request_too_large" || status != 413 {
		t.Fatalf("got %v, want request_too_large 413", e)
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err := ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("after the error: %v, want close 1009", err)
	}
	if a.calls() != 0 {
		t.Fatal("the oversize message reached the upstream")
	}
}

// TestSocketIdleTimeout: a socket that carries nothing for idle_timeout is
// closed (1000).
func TestSocketIdleTimeout(t *testing.T) {
	_, _, _, d, base, _ := startSocketGateway(t, "{websocket: {idle_timeout: 1s}}", "")
	ws := dialSocket(t, base, socketKey)
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err := ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("got %v, want close 1000", err)
	}
	waitFor(t, 5*time.Second, "the socket to be released", func() bool { return d.ws.Open() == 0 })
}

// TestSocketFailoverBeforeFirstEvent: the first member of [a, b] answers
// 503; the walk moves to b before any event, and the client sees b's
// response only.
func TestSocketFailoverBeforeFirstEvent(t *testing.T) {
	a, b, _, _, base, _ := startSocketGateway(t, "", "")
	a.fail.Store(503)
	ws := dialSocket(t, base, socketKey)
	send(t, ws, create("m-ab", "", userItem("hi")))
	got := readResponse(t, ws)
	if got[0].typ() != "response.created" || got[len(got)-1].responseID() != "resp_b_0" {
		t.Fatalf("events %v", got)
	}
	if a.calls() != 1 || b.calls() != 1 {
		t.Fatalf("calls a=%d b=%d, want 1 1", a.calls(), b.calls())
	}
}

// TestSocketClientLeavesCancelsUpstream: a client that closes its
// connection mid-stream cancels the upstream call (the upstream sees its
// request end), as over HTTP.
func TestSocketClientLeavesCancelsUpstream(t *testing.T) {
	a, _, _, _, base, _ := startSocketGateway(t, "", "")
	_, left := a.holdNext()
	ws := dialSocket(t, base, socketKey)
	send(t, ws, create("m-a", "", userItem("long")))
	if e := readEvent(t, ws); e.typ() != "response.created" {
		t.Fatalf("first event %v", e)
	}
	readEvent(t, ws)
	ws.UnderlyingConn().Close()
	select {
	case <-left:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call was not canceled within 5 s of the client leaving")
	}
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// TestSocketSIGTERMDrains: on SIGTERM a socket's response in flight runs
// to its end, then the socket is closed with 1001 (going away); a socket
// with nothing in flight closes at once; the process exits 0.
func TestSocketSIGTERMDrains(t *testing.T) {
	a, b, c := startRespUpstream(t, "a"), startRespUpstream(t, "b"), startRespUpstream(t, "c")
	path := cfgPath(t)
	writeFile(t, path, socketConfig(a, b, c, "", ""))
	sigs := make(chan os.Signal, 2)
	logs := &syncBuffer{}
	started := make(chan *Daemon, 1)
	exit := make(chan int, 1)
	go func() { exit <- run(path, "127.0.0.1:0", logs, sigs, func(d *Daemon) { started <- d }) }()
	d := <-started
	base := "http://" + d.Addr().String()

	release, _ := a.holdNext()
	ws := dialSocket(t, base, socketKey)
	idle := dialSocket(t, base, socketKey) // a second socket with nothing in flight
	send(t, ws, create("m-a", "", userItem("long")))
	readEvent(t, ws)
	readEvent(t, ws)
	sigs <- syscall.SIGTERM
	waitFor(t, 5*time.Second, "the drain to start", func() bool { return strings.Contains(logs.String(), "draining") })
	// The idle socket closes at once; the busy one only after its response.
	_ = idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := idle.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Fatalf("idle socket: %v, want close 1001", err)
	}
	select {
	case code := <-exit:
		t.Fatalf("exited (%d) with a response in flight", code)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	rest := readResponse(t, ws)
	if last := rest[len(rest)-1]; last.typ() != "response.completed" {
		t.Fatalf("the response in flight ended with %v", last)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Fatalf("after its response: %v, want close 1001", err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit after its sockets closed")
	}
}

// TestSocketReload: a reload applies to an open socket from its next
// response (the rule for m-a now names b).
func TestSocketReload(t *testing.T) {
	a, b, c := startRespUpstream(t, "a"), startRespUpstream(t, "b"), startRespUpstream(t, "c")
	path := cfgPath(t)
	writeFile(t, path, socketConfig(a, b, c, "", ""))
	d, base := startDaemon(t, path, io.Discard)
	ws := dialSocket(t, base, socketKey)
	send(t, ws, create("m-a", "", userItem("one")))
	readResponse(t, ws)
	writeFile(t, path, strings.Replace(socketConfig(a, b, c, "", ""), "value: m-a, target_key: a", "value: m-a, target_key: b", 1))
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("reload: %s", r)
	}
	send(t, ws, create("m-a", "", userItem("two")))
	if got := readResponse(t, ws); got[len(got)-1].responseID() != "resp_b_0" {
		t.Fatalf("after the reload: %v", got[len(got)-1])
	}
	if a.calls() != 1 || b.calls() != 1 {
		t.Fatalf("calls a=%d b=%d, want 1 1", a.calls(), b.calls())
	}
}

// TestSocketQuotaAndAudit: a key's requests_per_minute counts every
// response.create (the third of three gets a 429 error event, and the
// socket stays open), and the audit log has one line per response.
func TestSocketQuotaAndAudit(t *testing.T) {
	priv, _, err := audit.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	a, b, c := startRespUpstream(t, "a"), startRespUpstream(t, "b"), startRespUpstream(t, "c")
	path := cfgPath(t)
	cfg := socketConfig(a, b, c, "", fmt.Sprintf("audit: {path: %q, signing_key: %q}\n", auditPath, priv))
	cfg = strings.Replace(cfg, `models: ["m-*", "x-*"]}`, `models: ["m-*", "x-*"], limits: {requests_per_minute: 2}}`, 1)
	writeFile(t, path, cfg)
	_, base := startDaemon(t, path, io.Discard)
	ws := dialSocket(t, base, socketKey)
	for i := range 2 {
		send(t, ws, create("m-a", "", userItem("hi")))
		if got := readResponse(t, ws); got[len(got)-1].typ() != "response.completed" {
			t.Fatalf("response %d: %v", i, got[len(got)-1])
		}
	}
	send(t, ws, create("m-a", "", userItem("one too many")))
	e := readEvent(t, ws)
	if code, status := e.errorCode(); code != "key_rate_limited" || status != 429 {
		t.Fatalf("third response: %v, want key_rate_limited 429", e)
	}
	if h, _ := e["headers"].(map[string]any); h["retry-after"] == nil || h["x-ratelimit-limit-requests"] != "2" {
		t.Errorf("the 429 event's headers: %v", e["headers"])
	}
	if a.calls() != 2 {
		t.Fatalf("%d upstream calls, want 2", a.calls())
	}
	// The socket is still open.
	send(t, ws, `{"type":"response.create"}`)
	if e := readEvent(t, ws); e.typ() != "error" {
		t.Fatalf("after the 429: %v", e)
	}
	lines := func() []string {
		b, _ := os.ReadFile(auditPath)
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"surface":"responses"`) {
				out = append(out, l)
			}
		}
		return out
	}
	// Four bridged requests passed authentication (the last, without a
	// model, was refused by the handler, as over HTTP): four lines.
	waitFor(t, 5*time.Second, "four audit lines", func() bool { return len(lines()) >= 4 })
	if got := lines(); len(got) != 4 || !strings.Contains(got[0], `"key":"coder"`) ||
		!strings.Contains(got[2], `"status":429`) || !strings.Contains(got[3], `"status":400`) {
		t.Fatalf("audit lines:\n%s", strings.Join(got, "\n"))
	}
}

// TestSocketMemoryRules: a continuation naming a response other than the
// socket's last follows the HTTP rules (an id the key does not own is 404
// response_not_found, before any upstream call); a continuation of a last
// response whose memory passed its bound is 400
// previous_response_not_supported.
func TestSocketMemoryRules(t *testing.T) {
	a, _, _, _, base, _ := startSocketGateway(t, "{websocket: {max_message_bytes: 1024}}", "")
	a.text = strings.Repeat("long answer ", 400) // ~4.8 KB of output: past 4 x 1024
	ws := dialSocket(t, base, socketKey)
	send(t, ws, create("m-a", `,"previous_response_id":"resp_not_mine"`, userItem("hi")))
	e := readEvent(t, ws)
	if code, status := e.errorCode(); code != "response_not_found" || status != 404 {
		t.Fatalf("foreign id: %v", e)
	}
	send(t, ws, create("m-a", "", userItem("hi")))
	got := readResponse(t, ws)
	id := got[len(got)-1].responseID()
	send(t, ws, create("m-a", fmt.Sprintf(`,"previous_response_id":%q`, id), userItem("more")))
	e = readEvent(t, ws)
	if code, status := e.errorCode(); code != "previous_response_not_supported" || status != 400 {
		t.Fatalf("continuation of a dropped memory: %v", e)
	}
	if a.calls() != 1 {
		t.Fatalf("%d upstream calls, want 1", a.calls())
	}
	// The whole input without previous_response_id still works.
	send(t, ws, create("m-a", "", userItem("hi"), userItem("more")))
	if got := readResponse(t, ws); got[len(got)-1].typ() != "response.completed" {
		t.Fatalf("full input: %v", got[len(got)-1])
	}
}
