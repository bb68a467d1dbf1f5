package e2e

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Replaying what real clients sent. testdata/clients holds requests that
// Claude Code and Codex wrote to the gateway, recorded on the wire between
// the client and the gateway (docs/providers.md, Tested with): method,
// target, headers in their order and case, and the JSON body or WebSocket
// messages, strings over 80 characters cut to 60 (the clients' prompts and
// tool descriptions), every member and shape kept. The helpers here send
// them again as the client did, over raw TCP.

// clientFixture is one recorded session.
type clientFixture struct {
	Client   string          `json:"client"`
	Recorded string          `json:"recorded"`
	Note     string          `json:"note"`
	Requests []clientRequest `json:"requests"`
}

// clientRequest is one HTTP request, or a WebSocket upgrade (Frames set:
// the client's text messages, in order).
type clientRequest struct {
	Method  string            `json:"method"`
	Target  string            `json:"target"`
	Headers [][2]string       `json:"headers"`
	Body    json.RawMessage   `json:"body"`
	Frames  []json.RawMessage `json:"frames"`
}

func loadClientFixture(t *testing.T, name string) clientFixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "clients", name))
	if err != nil {
		t.Fatal(err)
	}
	var f clientFixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

// compact is v on one line, as the clients send their JSON.
func compact(t *testing.T, v json.RawMessage) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeHead writes the request line, Host and the recorded headers.
func writeHead(w io.Writer, addr string, r clientRequest, extra ...string) {
	fmt.Fprintf(w, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.Method, r.Target, addr)
	for _, h := range r.Headers {
		fmt.Fprintf(w, "%s: %s\r\n", h[0], h[1])
	}
	for _, h := range extra {
		fmt.Fprintf(w, "%s\r\n", h)
	}
}

// replayHTTP sends r to the gateway at addr on a new connection and
// returns its answer, the body read whole (a stream to its end).
func replayHTTP(t *testing.T, addr string, r clientRequest) (*http.Response, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	body := compact(t, r.Body)
	var req bytes.Buffer
	writeHead(&req, addr, r, fmt.Sprintf("Content-Length: %d", len(body)), "")
	req.Write(body)
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp, string(b)
}

// clientSocket is a WebSocket opened with a recorded upgrade's headers,
// its extension offer included (Codex offers permessage-deflate), which a
// WebSocket library would write its own way.
type clientSocket struct {
	c  net.Conn
	rd *bufio.Reader
}

func openClientSocket(t *testing.T, addr string, r clientRequest) *clientSocket {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var key [16]byte
	_, _ = rand.Read(key[:])
	var req bytes.Buffer
	writeHead(&req, addr, r, "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
		"Sec-WebSocket-Key: "+base64.StdEncoding.EncodeToString(key[:]), "")
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	s := &clientSocket{c: c, rd: bufio.NewReader(c)}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(s.rd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("upgrade: %s %s", resp.Status, b)
	}
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" {
		t.Fatalf("the gateway accepted extensions %q: messages would be compressed", ext)
	}
	return s
}

// send writes msg as one masked text frame, as a client must.
func (s *clientSocket) send(t *testing.T, msg []byte) {
	t.Helper()
	hdr := []byte{0x81, 0}
	switch n := len(msg); {
	case n < 126:
		hdr[1] = 0x80 | byte(n)
	case n < 1<<16:
		hdr[1] = 0x80 | 126
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr[1] = 0x80 | 127
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	out := append(hdr, msg...)
	for i := range msg {
		out[len(hdr)+i] ^= mask[i%4]
	}
	_ = s.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := s.c.Write(out); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// read returns the next text message (fragments joined); a close frame
// or any other opcode fails the test.
func (s *clientSocket) read(t *testing.T) []byte {
	t.Helper()
	_ = s.c.SetDeadline(time.Now().Add(10 * time.Second))
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(s.rd, h[:]); err != nil {
			t.Fatalf("read: %v", err)
		}
		if h[1]&0x80 != 0 {
			t.Fatal("the gateway masked a frame")
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var l [2]byte
			_, _ = io.ReadFull(s.rd, l[:])
			n = uint64(binary.BigEndian.Uint16(l[:]))
		case 127:
			var l [8]byte
			_, _ = io.ReadFull(s.rd, l[:])
			n = binary.BigEndian.Uint64(l[:])
		}
		if n > 64<<20 {
			t.Fatalf("a frame of %d bytes", n)
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(s.rd, p); err != nil {
			t.Fatalf("read: %v", err)
		}
		if op := h[0] & 0x0f; op != 0x1 && op != 0x0 {
			t.Fatalf("frame opcode %d (%q), want a text message", op, p)
		}
		msg = append(msg, p...)
		if h[0]&0x80 != 0 {
			return msg
		}
	}
}

// readResponse reads one response's events up to its last
// (response.completed, .incomplete, .failed, or error).
func (s *clientSocket) readResponse(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for {
		var e map[string]any
		if b := s.read(t); json.Unmarshal(b, &e) != nil {
			t.Fatalf("a message that is not JSON: %s", b)
		}
		out = append(out, e)
		switch e["type"] {
		case "response.completed", "response.incomplete", "response.failed", "error":
			return out
		}
	}
}
