package daemon

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// Attacks on Responses over WebSocket, on the wire.

// maskedFrame is one client text frame (FIN, masked) carrying payload.
func maskedFrame(payload string) []byte {
	b := []byte{0x81}
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	mask := [4]byte{0x12, 0x34, 0x56, 0x78}
	b = append(b, mask[:]...)
	for i := range len(payload) {
		b = append(b, payload[i]^mask[i%4])
	}
	return b
}

// rawUpgrade writes head (request line and headers, without the blank
// line), the blank line and rest on a fresh connection to the gateway at
// base, and reads the answer's head; the connection (closed at the end of
// the test) and its reader are returned for what follows.
func rawUpgrade(t *testing.T, base, head string, rest []byte) (*http.Response, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	c.Write(rest) //nolint:errcheck // the gateway may refuse before reading it
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp, br
}

// TestSocketUpgradeFraming: an upgrade whose request carries a body (whose
// bytes the socket would otherwise read as its first frames, though a
// proxy in front forwarded them as the body: a response.create smuggled
// past whatever inspects the socket), or that is HTTP/1.0 or asks to
// close the connection (a 101 that could never be served), is refused
// 400 in OpenAI's envelope before any upgrade, and no frame in it is
// served; a plain one still opens.
func TestSocketUpgradeFraming(t *testing.T) {
	a, _, _, _, base, _ := startSocketGateway(t, "", "")
	host := strings.TrimPrefix(base, "http://")
	frame := maskedFrame(create("m-a", "", userItem("smuggled")))
	head := func(version, extra string) string {
		return "GET /v1/responses HTTP/" + version + "\r\nHost: " + host + "\r\nAuthorization: Bearer " + socketKey +
			"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" + extra
	}
	pad := strings.Repeat("p", 256<<10) // past what the server reads ahead
	for _, c := range []struct {
		name, head string
		rest       []byte
	}{
		{"chunked body", head("1.1", "Transfer-Encoding: chunked\r\n"), frame},
		{"large body", head("1.1", fmt.Sprintf("Content-Length: %d\r\n", len(pad)+len(frame))), append([]byte(pad), frame...)},
		{"small body", head("1.1", fmt.Sprintf("Content-Length: %d\r\n", len(frame))), frame},
		{"HTTP/1.0", head("1.0", ""), frame},
		{"Connection: close", strings.Replace(head("1.1", ""), "Connection: Upgrade", "Connection: Upgrade, close", 1), frame},
	} {
		t.Run(c.name, func(t *testing.T) {
			if resp, _ := rawUpgrade(t, base, c.head, c.rest); resp.StatusCode != 400 {
				t.Fatalf("status %d; want 400", resp.StatusCode)
			}
		})
	}
	if n := a.calls(); n != 0 {
		t.Fatalf("%d smuggled responses reached the upstream; want none", n)
	}
	// The same frame after a plain upgrade is served.
	resp, br := rawUpgrade(t, base, head("1.1", ""), frame)
	if resp.StatusCode != 101 {
		t.Fatalf("plain upgrade: %d", resp.StatusCode)
	}
	readUntil(t, br, "response.completed")
	if a.calls() != 1 {
		t.Fatalf("plain upgrade: %d upstream calls; want 1", a.calls())
	}
}

const otherSocketKey = "sy-socket-other-key-0123456789abcdef"

// withOtherKey adds the client key "other" (any m-* model) to a socket
// configuration.
func withOtherKey(cfg string) string {
	return strings.Replace(cfg, "auth:\n  keys:\n", "auth:\n  keys:\n    - {name: other, key: "+otherSocketKey+`, models: ["m-*"]}`+"\n", 1)
}

// TestSocketMemoryIsTheSocketsOwn: one socket's memory of its last response
// is never another socket's. The same id named on a second socket of the
// same key is sent as is (previous_response_id, only the new items: the
// member holds the context, not the gateway); on a socket of another key
// it is 404 response_not_found with no upstream call, escaped key or not.
func TestSocketMemoryIsTheSocketsOwn(t *testing.T) {
	a, b, c := startRespUpstream(t, "a"), startRespUpstream(t, "b"), startRespUpstream(t, "c")
	path := cfgPath(t)
	writeFile(t, path, withOtherKey(socketConfig(a, b, c, "", "")))
	_, base := startDaemon(t, path, io.Discard)
	first := dialSocket(t, base, socketKey)
	send(t, first, create("m-a", "", userItem("the coder's secret")))
	got := readResponse(t, first)
	id := got[len(got)-1].responseID()

	stranger := dialSocket(t, base, otherSocketKey)
	for _, member := range []string{`,"previous_response_id":%q`, `,"previous_response_\u0069d":%q`} {
		send(t, stranger, create("m-a", fmt.Sprintf(member, id), userItem("tell me")))
		e := readEvent(t, stranger)
		if code, status := e.errorCode(); code != "response_not_found" || status != 404 {
			t.Fatalf("another key continuing %s (%s): %v", id, member, e)
		}
	}
	if a.calls() != 1 {
		t.Fatalf("%d upstream calls; want 1 (the stranger's were refused)", a.calls())
	}

	second := dialSocket(t, base, socketKey)
	send(t, second, create("m-a", fmt.Sprintf(`,"previous_response_id":%q`, id), userItem("more")))
	readResponse(t, second)
	body := a.body(t, 1)
	input, _ := json.Marshal(body["input"])
	if body["previous_response_id"] != id || !jsonEqual(t, string(input), "["+userItem("more")+"]") {
		t.Fatalf("a second socket's continuation was sent as %v; want previous_response_id %s and only the new item", body, id)
	}
}

// TestSocketKeyRevokedByReload: a client key removed by a reload while its
// socket is open gets 401 invalid_api_key for its next response.create,
// with no upstream call: each response is authenticated anew, not by the
// upgrade. A key whose allow-list shrank gets 403 the same way.
func TestSocketKeyRevokedByReload(t *testing.T) {
	a, b, c := startRespUpstream(t, "a"), startRespUpstream(t, "b"), startRespUpstream(t, "c")
	path := cfgPath(t)
	cfg := withOtherKey(socketConfig(a, b, c, "", ""))
	writeFile(t, path, cfg)
	d, base := startDaemon(t, path, io.Discard)
	coder, other := dialSocket(t, base, socketKey), dialSocket(t, base, otherSocketKey)
	for _, ws := range []*websocket.Conn{coder, other} {
		send(t, ws, create("m-a", "", userItem("hi")))
		readResponse(t, ws)
	}
	cfg = strings.Replace(cfg, `    - {name: other, key: `+otherSocketKey+`, models: ["m-*"]}`+"\n", "", 1)
	cfg = strings.Replace(cfg, `models: ["m-*", "x-*"]`, `models: ["m-b"]`, 1)
	writeFile(t, path, cfg)
	if r := d.Reload(); r != ReloadSuccess {
		t.Fatalf("reload: %s", r)
	}
	send(t, other, create("m-a", "", userItem("still here?")))
	if code, status := readEvent(t, other).errorCode(); code != "invalid_api_key" || status != 401 {
		t.Fatalf("the revoked key's next response: %s %d; want invalid_api_key 401", code, status)
	}
	send(t, coder, create("m-a", "", userItem("still allowed?")))
	if code, status := readEvent(t, coder).errorCode(); code != "model_not_allowed" || status != 403 {
		t.Fatalf("a model no longer allowed: %s %d; want model_not_allowed 403", code, status)
	}
	if a.calls() != 2 {
		t.Fatalf("%d upstream calls; want 2 (none after the reload)", a.calls())
	}
}

// TestSocketFramesSplitAndFragmented: a message whose frame arrives a byte
// at a time, and one sent in three fragments with a ping between them,
// are each served as one response.create; the ping is answered.
func TestSocketFramesSplitAndFragmented(t *testing.T) {
	a, _, _, _, base, _ := startSocketGateway(t, "", "")
	host := strings.TrimPrefix(base, "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /v1/responses HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", host, socketKey)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	for _, b := range maskedFrame(create("m-a", "", userItem("one byte at a time"))) {
		if _, err := c.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	readUntil(t, br, "response.completed")
	msg := create("m-a", "", userItem("in three pieces"))
	third := len(msg) / 3
	frag := func(op byte, fin bool, p string) []byte {
		f := maskedFrame(p)
		f[0] = op
		if fin {
			f[0] |= 0x80
		}
		return f
	}
	var wire []byte
	wire = append(wire, frag(0x1, false, msg[:third])...)
	wire = append(wire, frag(0x9, true, "are you there")...) // ping, between fragments
	wire = append(wire, frag(0x0, false, msg[third:2*third])...)
	wire = append(wire, frag(0x0, true, msg[2*third:])...)
	if _, err := c.Write(wire); err != nil {
		t.Fatal(err)
	}
	got := readUntil(t, br, "response.completed")
	if !strings.Contains(got, "\x8a\x0dare you there") {
		t.Errorf("no pong for the ping between fragments in %q", got)
	}
	if a.calls() != 2 {
		t.Fatalf("%d upstream calls; want 2", a.calls())
	}
	input, _ := json.Marshal(a.body(t, 1)["input"])
	if !jsonEqual(t, string(input), "["+userItem("in three pieces")+"]") {
		t.Fatalf("the fragmented message was sent as %s", input)
	}
}

// readUntil reads server frames (unmasked) as raw bytes until want
// appears.
func readUntil(t *testing.T, br *bufio.Reader, want string) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(b.String(), want) {
		n, err := br.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			t.Fatalf("read: %v after %q", err, b.String())
		}
	}
	return b.String()
}

// TestSocketMemoryWithinMaxRequestBytes: warm-ups (answered by the gateway
// with no HTTP request, so no body limit) cannot make a socket hold a
// context larger than any request may be: a memory past
// server.max_request_bytes is dropped, its continuation refused at once
// with 400 previous_response_not_supported, and the socket is not left
// holding four messages' worth of input per warm-up chain.
func TestSocketMemoryWithinMaxRequestBytes(t *testing.T) {
	a, _, _, _, base, _ := startSocketGateway(t, "{max_request_bytes: 4096, websocket: {max_message_bytes: 3072}}", "")
	ws := dialSocket(t, base, socketKey)
	prev := ""
	for i := range 2 {
		send(t, ws, create("m-a", prev+`,"generate":false`, userItem(strings.Repeat("w", 2000))))
		got := readResponse(t, ws)
		if got[len(got)-1].typ() != "response.completed" {
			t.Fatalf("warm-up %d: %v", i, got[len(got)-1])
		}
		prev = fmt.Sprintf(`,"previous_response_id":%q`, got[len(got)-1].responseID())
	}
	// Two warm-ups hold ~4.2 KB of input: within 4 x 3072, past 4096.
	send(t, ws, create("m-a", prev, userItem("go")))
	e := readEvent(t, ws)
	if code, status := e.errorCode(); code != "previous_response_not_supported" || status != 400 {
		t.Fatalf("continuing a memory past max_request_bytes: %v; want 400 previous_response_not_supported", e)
	}
	if a.calls() != 0 {
		t.Fatalf("%d upstream calls; want none", a.calls())
	}
}

// TestSocketClientLeavesWhileMessagesWait: a client that sends more
// response.create messages while one streams, so that one waits its turn
// and the reader holds the next, and then leaves, still cancels the
// upstream call in flight (as over HTTP): the socket notices the
// departure though it reads no further messages.
func TestSocketClientLeavesWhileMessagesWait(t *testing.T) {
	a, _, _, _, base, _ := startSocketGateway(t, "", "")
	_, left := a.holdNext()
	ws := dialSocket(t, base, socketKey)
	send(t, ws, create("m-a", "", userItem("long")))
	if e := readEvent(t, ws); e.typ() != "response.created" {
		t.Fatalf("first event %v", e)
	}
	for range 3 {
		send(t, ws, create("m-a", "", userItem("and then")))
	}
	ws.Close()
	select {
	case <-left:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call was not canceled 5 s after the client left")
	}
}

// TestSocketFloodWhileStreaming: messages sent while a response streams
// wait their turn (no second upstream call meanwhile) and are answered
// one after another in the order sent, each a response of its own.
func TestSocketFloodWhileStreaming(t *testing.T) {
	a, _, _, _, base, _ := startSocketGateway(t, "", "")
	release, _ := a.holdNext()
	ws := dialSocket(t, base, socketKey)
	send(t, ws, create("m-a", "", userItem("first")))
	if e := readEvent(t, ws); e.typ() != "response.created" {
		t.Fatalf("first event %v", e)
	}
	for i := range 8 {
		send(t, ws, create("m-a", "", userItem(fmt.Sprint("flood ", i))))
	}
	if n := a.calls(); n != 1 {
		t.Fatalf("%d upstream calls while the first response streams; want 1", n)
	}
	release()
	readResponse(t, ws)
	for i := range 8 {
		got := readResponse(t, ws)
		if got[len(got)-1].typ() != "response.completed" {
			t.Fatalf("flood %d: %v", i, got[len(got)-1])
		}
		input, _ := json.Marshal(a.body(t, i+1)["input"])
		if !jsonEqual(t, string(input), "["+userItem(fmt.Sprint("flood ", i))+"]") {
			t.Fatalf("upstream call %d carried %s; want flood %d", i+1, input, i)
		}
	}
}
