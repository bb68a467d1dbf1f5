package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// respUpstream is a Responses API upstream for the socket tests: it
// records each request and answers a stream (response.created, one
// message item, response.completed), or fails, or holds its stream open.
type respUpstream struct {
	name string
	srv  *httptest.Server
	// fail, when not 0, is the status every request gets.
	fail atomic.Int32
	// text is the output message's text.
	text string

	mu     sync.Mutex
	bodies []string
	auths  []string
	// hold, when set, makes the stream stop after its first two events until
	// it is closed or the client leaves (left is then closed).
	hold chan struct{}
	left chan struct{}
}

func startRespUpstream(t *testing.T, name string) *respUpstream {
	t.Helper()
	u := &respUpstream{name: name, text: "answer from " + name}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

// base is the target base_url.
func (u *respUpstream) base() string { return u.srv.URL + "/v1" }

func (u *respUpstream) calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.bodies)
}

// body returns the request body of call i, decoded.
func (u *respUpstream) body(t *testing.T, i int) map[string]any {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal([]byte(u.bodies[i]), &m); err != nil {
		t.Fatalf("%s call %d: %v: %s", u.name, i, err, u.bodies[i])
	}
	return m
}

// holdNext makes the next streams wait after response.created.
func (u *respUpstream) holdNext() (release func(), left <-chan struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.hold, u.left = make(chan struct{}), make(chan struct{})
	h := u.hold
	return func() { close(h) }, u.left
}

func (u *respUpstream) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	n := len(u.bodies)
	u.bodies = append(u.bodies, string(b))
	u.auths = append(u.auths, r.Header.Get("Authorization"))
	hold, left := u.hold, u.left
	u.mu.Unlock()
	if r.URL.Path != "/v1/responses" {
		http.Error(w, "wrong path "+r.URL.Path, 404)
		return
	}
	if s := u.fail.Load(); s != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(s))
		fmt.Fprintf(w, `{"error":{"message":"%s is failing","type":"server_error","param":null,"code":"overloaded"}}`, u.name)
		return
	}
	id := fmt.Sprintf("resp_%s_%d", u.name, n)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	event := func(typ, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
		fl.Flush()
	}
	event("response.created", fmt.Sprintf(`{"type":"response.created","sequence_number":0,"response":{"id":%q,"object":"response","status":"in_progress","output":[]}}`, id))
	// The gateway holds response.created back until the event after it.
	event("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message","role":"assistant","content":[]}}`)
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			close(left)
			return
		}
	}
	item := fmt.Sprintf(`{"id":"msg_%s_%d","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":%q,"annotations":[]}]}`, u.name, n, u.text)
	event("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,"output_index":0,"content_index":0,"delta":"answer"}`)
	event("response.output_item.done", `{"type":"response.output_item.done","sequence_number":2,"output_index":0,"item":`+item+`}`)
	event("response.completed", fmt.Sprintf(`{"type":"response.completed","sequence_number":3,"response":{"id":%q,"object":"response","status":"completed","output":[%s],"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}}`, id, item))
}

// socketURL is the WebSocket URL of the gateway at base.
func socketURL(base string) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/v1/responses"
}

// dialSocket opens a socket with the client key key ("" = none).
func dialSocket(t *testing.T, base, key string) *websocket.Conn {
	t.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	h.Set("OpenAI-Beta", "responses_websockets=2026-02-06")
	c, resp, err := websocket.DefaultDialer.Dial(socketURL(base), h)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (status %d)", err, status)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// event is one decoded message of the gateway.
type event map[string]any

func (e event) typ() string { s, _ := e["type"].(string); return s }

// errorCode returns an error event's error.code and status.
func (e event) errorCode() (string, int) {
	o, _ := e["error"].(map[string]any)
	c, _ := o["code"].(string)
	s, _ := e["status"].(float64)
	return c, int(s)
}

// responseID returns the response id of a response.* event.
func (e event) responseID() string {
	r, _ := e["response"].(map[string]any)
	s, _ := r["id"].(string)
	return s
}

// send writes msg (a JSON text) on c.
func send(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// readEvent reads one message, waiting at most 10 s.
func readEvent(t *testing.T, c *websocket.Conn) event {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, b, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if typ != websocket.TextMessage {
		t.Fatalf("message type %d, want text", typ)
	}
	var e event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("message is not JSON: %v: %s", err, b)
	}
	return e
}

// readResponse reads messages up to and including a last one
// (response.completed, .incomplete, .failed, or error).
func readResponse(t *testing.T, c *websocket.Conn) []event {
	t.Helper()
	var out []event
	for {
		e := readEvent(t, c)
		out = append(out, e)
		switch e.typ() {
		case "response.completed", "response.incomplete", "response.failed", "error":
			return out
		}
	}
}

// types lists the types of events.
func types(events []event) []string {
	var s []string
	for _, e := range events {
		s = append(s, e.typ())
	}
	return s
}

// create is a response.create message for model with input items.
func create(model string, extra string, items ...string) string {
	return fmt.Sprintf(`{"type":"response.create","model":%q,"store":false,"stream":true,"input":[%s]%s}`, model, strings.Join(items, ","), extra)
}

// userItem is an input message item with text.
func userItem(text string) string {
	return fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}`, text)
}
