package daemon

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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
// base, then reads the answer's head and whatever follows within a
// moment.
func rawUpgrade(t *testing.T, base, head string, rest []byte) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	c.Write(rest) //nolint:errcheck // the gateway may refuse before reading it
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	b, _ := io.ReadAll(br)
	return resp, string(b)
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
			resp, rest := rawUpgrade(t, base, c.head, c.rest)
			if resp.StatusCode != 400 {
				t.Fatalf("status %d (then %q); want 400", resp.StatusCode, rest)
			}
		})
	}
	if n := a.calls(); n != 0 {
		t.Fatalf("%d smuggled responses reached the upstream; want none", n)
	}
	// The same frame after a plain upgrade is served.
	resp, rest := rawUpgrade(t, base, head("1.1", ""), frame)
	if resp.StatusCode != 101 || !strings.Contains(rest, "response.completed") || a.calls() != 1 {
		t.Fatalf("plain upgrade: %d %q, %d calls", resp.StatusCode, rest, a.calls())
	}
}
