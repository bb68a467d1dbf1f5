package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestKeyRefusedBeforeBody: a request without a valid client key is refused
// as soon as its header section is in, with and without "Expect:
// 100-continue", in both body modes (server.reduce_memory_usage false and
// true): no 100 Continue, and the answer comes though the client sends
// headers only and declares a body far over what fasthttp pre-reads, or a
// chunked one. A valid key is still invited to send its body.
func TestKeyRefusedBeforeBody(t *testing.T) {
	keys := []struct {
		name, lines, status string
	}{
		{"missing", "", "401"},
		{"unknown", "Authorization: Bearer sy-not-a-configured-key-0123456789\r\n", "401"},
		{"unknown x-api-key", "x-api-key: sy-not-a-configured-key-0123456789\r\n", "401"},
		{"non-Bearer", "Authorization: Basic " + clientEchoKey + "\r\n", "401"},
		{"conflicting", "Authorization: Bearer " + clientEchoKey + "\r\nx-api-key: sy-other\r\n", "400"},
		{"repeated", "Authorization: Bearer " + clientEchoKey + "\r\nAuthorization: Bearer " + clientEchoKey + "\r\n", "400"},
	}
	for _, reduce := range []bool{false, true} {
		g := startGatewayYAML(t, fmt.Sprintf(keyedYAML, "info", "http://127.0.0.1:1/v1",
			fmt.Sprintf("  reduce_memory_usage: %v\n", reduce)))
		for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses"} {
			for _, expect := range []bool{false, true} {
				for _, k := range keys {
					name := fmt.Sprintf("reduce=%v %s expect=%v %s", reduce, path, expect, k.name)
					status, first := headersOnly(t, g.addr, path, k.lines, expect)
					if first == "100" {
						t.Errorf("%s: answered 100 Continue", name)
					}
					if status != k.status {
						t.Errorf("%s: status %q, want %s before any body byte", name, status, k.status)
					}
					name += " chunked"
					status, first = headersOnly(t, g.addr, path, "Transfer-Encoding: chunked\r\n"+k.lines, expect)
					if first == "100" {
						t.Errorf("%s: answered 100 Continue", name)
					}
					if status != k.status {
						t.Errorf("%s: status %q, want %s before any body byte", name, status, k.status)
					}
				}
			}
		}
		// The valid key is invited.
		_, first := headersOnly(t, g.addr, "/v1/chat/completions", "Authorization: Bearer "+clientEchoKey+"\r\n", true)
		if first != "100" {
			t.Errorf("reduce=%v: a valid key's request got %q, want 100 Continue", reduce, first)
		}
	}
}

// headersOnly sends a POST's header section (with Content-Length 1 MiB,
// unless lines declare a chunked body, and the given extra lines) and no body, and returns the status of the
// final answer and that of the first one (the two differ after a 100
// Continue, whose final answer is then not waited for: ""). An answer
// that does not come within 5 s is "".
func headersOnly(t *testing.T, addr, path, lines string, expect bool) (status, first string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	ex := ""
	if expect {
		ex = "Expect: 100-continue\r\n"
	}
	length := fmt.Sprintf("Content-Length: %d\r\n", 1<<20)
	if strings.Contains(lines, "Transfer-Encoding: chunked") {
		length = ""
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n%s%s%s\r\n",
		path, length, ex, lines)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", ""
	}
	first = strings.Fields(resp.Status)[0]
	if resp.StatusCode == http.StatusContinue {
		return "", first
	}
	resp.Body.Close()
	return first, first
}
