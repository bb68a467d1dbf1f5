package e2e

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// keyedYAML is a gateway at log level %[1]s whose single target (never
// reached in these tests) is at %[2]s, with one client key, clientEchoKey.
const keyedYAML = `server:
  listen: 127.0.0.1:0
  shutdown_timeout: 5s
%[3]slog:
  level: %[1]s
  format: json
  access_log: true
strategy:
  mode: conditional
  conditions:
    - {key: model, value: never-sent, target_key: t}
targets:
  - {virtual_key: t, provider: openai, base_url: "%[2]s", api_key: sk-target}
auth:
  keys:
    - {name: echo, key: ` + clientEchoKey + `}
`

// clientEchoKey is a client key these tests present in a malformed line.
const clientEchoKey = "sy-echo-0123456789abcdef0123456789abcdef"

// rawExchange writes req on a new connection to addr and returns all that
// comes back until the gateway closes the connection (or 10 s).
func rawExchange(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	return string(b)
}

// TestMalformedHeadersNeverEchoKey: for every class of header-section error
// fasthttp reports, with a client key in the offending line, the answer is
// the class's fixed text and neither it nor any log line (at every log
// level, debug included) holds any part of the key. fasthttp quotes the
// offending value in its error, which the gateway used to relay.
func TestMalformedHeadersNeverEchoKey(t *testing.T) {
	post := "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
	tail := "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
	cases := []struct {
		name, req, status, msg string
	}{
		{"value CR", post + "Authorization: Bearer " + clientEchoKey + "\r\r\n" + tail, "400", "malformed HTTP header field"},
		{"value NUL", post + "Authorization: Bearer " + clientEchoKey + "\x00\r\n" + tail, "400", "malformed HTTP header field"},
		{"value DEL", post + "x-api-key: " + clientEchoKey + "\x7f\r\n" + tail, "400", "malformed HTTP header field"},
		{"value ESC", post + "x-api-key: \x1b" + clientEchoKey + "\r\n" + tail, "400", "malformed HTTP header field"},
		{"name tab", post + "Authorization\t: Bearer " + clientEchoKey + "\r\n" + tail, "400", "malformed HTTP header field"},
		{"name VT", post + "X-Api-Key\x0b: " + clientEchoKey + "\r\n" + tail, "400", "malformed HTTP header field"},
		{"name with key", post + clientEchoKey + "\x01: x\r\n" + tail, "400", "malformed HTTP header field"},
		{"version", "POST /v1/chat/completions HTTP/1.1" + clientEchoKey + "\r\nHost: localhost\r\n" + tail, "400", "malformed HTTP request line"},
		{"method", clientEchoKey + "\x01 /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n" + tail, "400", "malformed HTTP request line"},
		{"uri", "POST /v1/" + clientEchoKey + "\x01 HTTP/1.1\r\nHost: localhost\r\n" + tail, "400", "malformed HTTP request line"},
		{"transfer-encoding", post + "Authorization: Bearer " + clientEchoKey + "\r\nTransfer-Encoding: " + clientEchoKey + "\r\n\r\n", "400", ""},
		{"content-length", post + "Authorization: Bearer " + clientEchoKey + "\r\nContent-Length: " + clientEchoKey + "\r\n\r\n", "400", "malformed or conflicting Content-Length"},
		{"two content-lengths", post + "Authorization: Bearer " + clientEchoKey + "\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "400", "malformed or conflicting Content-Length"},
		{"two hosts", post + "Host: " + clientEchoKey + "\r\nAuthorization: Bearer " + clientEchoKey + "\r\n" + tail, "400", "the Host header is sent more than once"},
		{"too large", post + "Authorization: Bearer " + clientEchoKey + "\r\nX-Pad: " + strings.Repeat("a", 40<<10) + clientEchoKey + "\r\n" + tail, "431", "request headers are too large"},
	}
	// Any 12 bytes of the key's random part would do to find it again.
	needles := []string{clientEchoKey, clientEchoKey[8:20], clientEchoKey[20:32]}
	for _, level := range []string{"debug", "info", "warn", "error"} {
		g := startGatewayYAML(t, fmt.Sprintf(keyedYAML, level, "http://127.0.0.1:1/v1", ""))
		for _, tc := range cases {
			got := rawExchange(t, g.addr, tc.req)
			if !strings.HasPrefix(got, "HTTP/1.1 "+tc.status+" ") {
				t.Errorf("%s/%s: answer %.200q, want status %s", level, tc.name, got, tc.status)
			}
			if tc.msg != "" && !strings.Contains(got, `"message":"`+tc.msg) {
				t.Errorf("%s/%s: answer %.300q, want the fixed message %q", level, tc.name, got, tc.msg)
			}
			for _, n := range needles {
				if strings.Contains(got, n) {
					t.Errorf("%s/%s: the answer echoes the client key: %q", level, tc.name, got)
				}
			}
		}
		// Lines are written before the connection closes; give the access
		// log's writer a moment.
		time.Sleep(200 * time.Millisecond)
		logs := g.logs.String()
		for _, n := range needles {
			if strings.Contains(logs, n) {
				t.Errorf("%s: a log line holds the client key:\n%s", level, logs)
				break
			}
		}
		if level == "debug" && !strings.Contains(logs, `"class":"header_field"`) {
			t.Errorf("debug: no error line with the error's class:\n%s", logs)
		}
	}
}
