package e2e

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/daemon"
)

// Issue 10's client-side defects, tried as an attacker would: raw bytes on
// a TCP connection to the daemon, each answer read off the wire.

// rawConn is one client connection to the gateway.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func (e *env) dialRaw(t *testing.T) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp4", e.d.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (r *rawConn) send(raw string) {
	r.t.Helper()
	if _, err := io.WriteString(r.c, raw); err != nil {
		r.t.Fatal(err)
	}
}

// read reads one response; its body is read whole.
func (r *rawConn) read() (*http.Response, string) {
	r.t.Helper()
	resp, err := http.ReadResponse(r.br, nil)
	if err != nil {
		r.t.Fatalf("reading a response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatalf("reading a response body: %v", err)
	}
	return resp, string(b)
}

// closed checks that the gateway closes the connection with nothing more
// to say (no answer to bytes sent after the refused request).
func (r *rawConn) closed() {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(3 * time.Second))
	b, err := r.br.ReadByte()
	if err == nil {
		rest, _ := r.br.Peek(r.br.Buffered())
		r.t.Fatalf("the connection stayed open and carried %q", append([]byte{b}, rest...))
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		r.t.Fatalf("want the connection closed, got %v", err)
	}
}

// post is a raw POST head (without the blank line) to path with Host host.
func post(path, host string, lines ...string) string {
	s := "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\n"
	for _, l := range lines {
		s += l + "\r\n"
	}
	return s
}

// smuggled is a complete second request, routed by its metadata to eu: the
// one an attacker hides in a first request's body.
func smuggled(host string) string {
	body := `{"model":"` + unmatchedModel + `","messages":[]}`
	return post("/v1/chat/completions", host, `X-Gateway-Metadata: {"tier":"gold"}`,
		"Content-Type: application/json", "Content-Length: "+strconv.Itoa(len(body))) + "\r\n" + body
}

func wantStatus(t *testing.T, resp *http.Response, body string, status int, code string) {
	t.Helper()
	if resp.StatusCode != status || !strings.Contains(body, `"code":"`+code+`"`) {
		t.Fatalf("got %d %s; want %d with code %s", resp.StatusCode, body, status, code)
	}
}

// Defect 2: a Transfer-Encoding other than a single final chunked, or one
// with Content-Length, is 400 and the connection is closed, so the bytes
// after the head are never read as a request of their own.
func TestTransferEncodingSmugglingIsRefused(t *testing.T) {
	e := newEnv(t)
	host := e.d.Addr().String()
	chunk := `{"model":"gpt-4o"}`
	for _, tc := range []struct {
		name, te, rest string
	}{
		{"identity", "Transfer-Encoding: identity", "\r\n" + smuggled(host)},
		{"identity upper case", "Transfer-Encoding: IDENTITY", "\r\n" + smuggled(host)},
		{"identity then chunked", "Transfer-Encoding: identity, chunked", "\r\n" + smuggled(host)},
		{"gzip", "Transfer-Encoding: gzip", "\r\n" + smuggled(host)},
		{"chunked with Content-Length", "Transfer-Encoding: chunked\r\nContent-Length: 5",
			"\r\n" + strconv.FormatInt(int64(len(chunk)), 16) + "\r\n" + chunk + "\r\n0\r\n\r\n" + smuggled(host)},
		{"Content-Length with chunked", "Content-Length: 0\r\nTransfer-Encoding: chunked",
			"\r\n0\r\n\r\n" + smuggled(host)},
		{"folded header line", "X-Gateway-Metadata: {\"tier\":\r\n \"gold\"}\r\nContent-Length: 0", "\r\n" + smuggled(host)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.dialRaw(t)
			c.send(post("/v1/chat/completions", host, "Content-Type: application/json", tc.te) + tc.rest)
			resp, body := c.read()
			wantStatus(t, resp, body, 400, "invalid_request")
			c.closed()
		})
	}
	e.wantCalls(t, 0, 0, 0, 0)

	// A plain chunked body, without trailers, is served.
	c := e.dialRaw(t)
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	c.send(post("/v1/chat/completions", host, "Content-Type: application/json", "Transfer-Encoding: chunked") +
		"\r\n" + strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n\r\n")
	if resp, b := c.read(); resp.StatusCode != 200 {
		t.Fatalf("chunked body: %d %s", resp.StatusCode, b)
	}
	e.wantCalls(t, 1, 0, 0, 0)
}

// Defect 3: a repeated X-Gateway-Metadata is 400, whichever line is empty.
// Before, the first line won: a client's own line pre-empted the one a
// front proxy appends.
func TestRepeatedMetadataHeaderIsRefused(t *testing.T) {
	e := newEnv(t)
	host := e.d.Addr().String()
	body := `{"model":"` + unmatchedModel + `","messages":[]}`
	for _, tc := range []struct{ name, first, second string }{
		{"empty first", "X-Gateway-Metadata:", `X-Gateway-Metadata: {"tier":"gold"}`},
		{"client's own first", `X-Gateway-Metadata: {"tier":"silver"}`, `x-gateway-metadata: {"tier":"gold"}`},
		{"same twice", `X-Gateway-Metadata: {"tier":"gold"}`, `X-GATEWAY-METADATA: {"tier":"gold"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.dialRaw(t)
			c.send(post("/v1/chat/completions", host, tc.first, "Content-Type: application/json", tc.second,
				"Content-Length: "+strconv.Itoa(len(body))) + "\r\n" + body)
			resp, b := c.read()
			wantStatus(t, resp, b, 400, "invalid_request")
			if !strings.Contains(b, "X-Gateway-Metadata is sent more than once") {
				t.Errorf("message: %s", b)
			}
		})
	}
	e.wantCalls(t, 0, 0, 0, 0)
	// Embeddings ignore the header (docs/routing.md, 2), repeated or not.
	c := e.dialRaw(t)
	emb := `{"model":"gpt-4o-mini","input":"hi"}`
	c.send(post("/v1/embeddings", host, "X-Gateway-Metadata: x", "X-Gateway-Metadata: y", "Content-Type: application/json",
		"Content-Length: "+strconv.Itoa(len(emb))) + "\r\n" + emb)
	if resp, b := c.read(); resp.StatusCode != 200 {
		t.Fatalf("embeddings: %d %s", resp.StatusCode, b)
	}
}

// Defect 4: a chunked body's trailer cannot choose the route: a request
// carrying trailer fields is 400 (and X-Gateway-Metadata is read from the
// header section only).
func TestTrailerFieldsAreRefused(t *testing.T) {
	e := newEnv(t)
	host := e.d.Addr().String()
	body := `{"model":"` + unmatchedModel + `","messages":[]}`
	chunked := "\r\n" + strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n"
	for _, tc := range []struct{ name, head, trailer string }{
		{"metadata in the trailer", "", `X-Gateway-Metadata: {"tier":"gold"}` + "\r\n"},
		{"announced metadata", "Trailer: X-Gateway-Metadata", `X-Gateway-Metadata: {"tier":"gold"}` + "\r\n"},
		{"x-api-key in the trailer", "", "x-api-key: someone-elses-key\r\n"},
		{"any field", "", "X-Checksum: 1234\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.dialRaw(t)
			lines := []string{"Content-Type: application/json", "Transfer-Encoding: chunked"}
			if tc.head != "" {
				lines = append(lines, tc.head)
			}
			c.send(post("/v1/chat/completions", host, lines...) + chunked + tc.trailer + "\r\n")
			resp, b := c.read()
			wantStatus(t, resp, b, 400, "invalid_request")
			if !strings.Contains(b, "trailer") {
				t.Errorf("message: %s", b)
			}
			c.closed()
		})
	}
	e.wantCalls(t, 0, 0, 0, 0)
}

// Defect 9: routes match the path as sent: an encoded slash is not the
// images surface (or any other).
func TestEncodedPathIsNotARoute(t *testing.T) {
	e := newEnv(t)
	host := e.d.Addr().String()
	body := `{"model":"gpt-4o","prompt":"a cat"}`
	for _, path := range []string{"/v1/images%2Fgenerations", "/v1/chat%2fcompletions", "/v1/%65mbeddings",
		"/v1//chat/completions", "/v1/./chat/completions", "/v1/images/../chat/completions"} {
		c := e.dialRaw(t)
		c.send(post(path, host, "Content-Type: application/json", "Content-Length: "+strconv.Itoa(len(body))) + "\r\n" + body)
		resp, b := c.read()
		if resp.StatusCode != 404 || !strings.Contains(b, `"code":"not_found"`) {
			t.Errorf("POST %s: %d %s; want 404 not_found", path, resp.StatusCode, b)
		}
	}
	e.wantCalls(t, 0, 0, 0, 0)
}

// Defect 9: an Expect: 100-continue request declaring a body over
// max_request_bytes gets 413 at once, not an invitation to send it.
func TestExpectContinueOverTheLimitIs413AtOnce(t *testing.T) {
	e := newEnv(t)
	host := e.d.Addr().String()
	c := e.dialRaw(t)
	c.send(post("/v1/chat/completions", host, "Content-Type: application/json", "X-Request-Id: big-expect",
		"Expect: 100-continue", "Content-Length: 20000000") + "\r\n")
	resp, b := c.read()
	wantStatus(t, resp, b, 413, "request_too_large")
	if resp.Header.Get("X-Request-Id") != "big-expect" {
		t.Errorf("X-Request-Id %q", resp.Header.Get("X-Request-Id"))
	}
	c.closed()

	// Within the limit, 100 Continue and then the answer.
	c = e.dialRaw(t)
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	c.send(post("/v1/chat/completions", host, "Content-Type: application/json", "Expect: 100-continue",
		"Content-Length: "+strconv.Itoa(len(body))) + "\r\n")
	if resp, _ := c.read(); resp.StatusCode != 100 {
		t.Fatalf("interim answer %d, want 100", resp.StatusCode)
	}
	c.send(body)
	if resp, b := c.read(); resp.StatusCode != 200 {
		t.Fatalf("after 100 Continue: %d %s", resp.StatusCode, b)
	}
	e.wantCalls(t, 1, 0, 0, 0)
}

// addServerLines inserts lines into the server block of e's config and
// reloads it (SIGHUP's work).
func (e *env) addServerLines(t *testing.T, lines string) {
	t.Helper()
	raw, err := os.ReadFile(e.path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(raw), "server:\n", "server:\n"+lines, 1)
	if err := os.WriteFile(e.path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := e.d.Reload(); got != daemon.ReloadSuccess {
		t.Fatalf("Reload = %q; logs:\n%s", got, e.logs)
	}
}

// Defect 8: on the loopback listener only loopback Host names (and
// server.allowed_hosts) are served, on every path (DNS rebinding); a
// request with an Origin outside server.allowed_origins is 403 (a
// cross-site page posting text/plain).
func TestBrowserAttacksOnALoopbackGateway(t *testing.T) {
	e := newEnv(t)
	_, port, _ := net.SplitHostPort(e.d.Addr().String())
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	send := func(method, path, host string, lines ...string) (*http.Response, string) {
		t.Helper()
		c := e.dialRaw(t)
		head := method + " " + path + " HTTP/1.1\r\nHost: " + host + "\r\n" + strings.Join(append(lines, ""), "\r\n")
		if method == "POST" {
			head += "Content-Type: text/plain\r\nContent-Length: " + strconv.Itoa(len(chat)) + "\r\n\r\n" + chat
		} else {
			head += "\r\n"
		}
		c.send(head)
		return c.read()
	}
	paths := []struct{ method, path string }{
		{"POST", "/v1/chat/completions"}, {"GET", "/v1/models"}, {"GET", "/healthz"}, {"GET", "/readyz"}, {"GET", "/metrics"},
	}
	for _, p := range paths {
		for _, host := range []string{"rebind.evil.example", "rebind.evil.example:" + port, "127.0.0.1.evil.example",
			"localhost.evil.example", "10.0.0.1:" + port, "[::2]:" + port} {
			resp, b := send(p.method, p.path, host)
			wantStatus(t, resp, b, 403, "host_not_allowed")
		}
		for _, host := range []string{"localhost", "LOCALHOST:" + port, "127.0.0.1:" + port, "127.8.9.10", "[::1]:" + port} {
			if resp, b := send(p.method, p.path, host); resp.StatusCode != 200 {
				t.Fatalf("%s %s Host %s: %d %s", p.method, p.path, host, resp.StatusCode, b)
			}
		}
		// An absolute-form target names the authority too.
		c := e.dialRaw(t)
		c.send(p.method + " http://rebind.evil.example:" + port + p.path + " HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n")
		resp, b := c.read()
		wantStatus(t, resp, b, 403, "host_not_allowed")
		resp, b = send(p.method, p.path, "127.0.0.1:"+port, "Origin: http://evil.example")
		wantStatus(t, resp, b, 403, "origin_not_allowed")
		resp, b = send(p.method, p.path, "127.0.0.1:"+port, "Origin: null")
		wantStatus(t, resp, b, 403, "origin_not_allowed")
	}
	e.wantCalls(t, 5, 0, 0, 0) // only the loopback-named chats

	// Allowed hosts and origins follow a reload.
	e.addServerLines(t, "  allowed_hosts: [gw.internal]\n  allowed_origins: [\"http://app.example:3000\"]\n")
	if resp, b := send("POST", "/v1/chat/completions", "GW.internal:"+port, "Origin: http://app.example:3000"); resp.StatusCode != 200 {
		t.Fatalf("allowed host and origin: %d %s", resp.StatusCode, b)
	}
	resp, b := send("POST", "/v1/chat/completions", "gw.internal", "Origin: http://app.example")
	wantStatus(t, resp, b, 403, "origin_not_allowed")
	resp, b = send("POST", "/v1/chat/completions", "gw.internal", "Origin: http://app.example:3000", "Origin: http://evil.example")
	wantStatus(t, resp, b, 403, "origin_not_allowed")
	resp, b = send("GET", "/v1/models", "other.internal")
	wantStatus(t, resp, b, 403, "host_not_allowed")
	e.wantCalls(t, 6, 0, 0, 0)
}
