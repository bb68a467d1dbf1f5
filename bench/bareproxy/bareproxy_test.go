package bareproxy

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/mock"
)

// serve runs s on a loopback port until the test ends.
func serve(t *testing.T, s *fasthttp.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown() })
	return ln.Addr().String()
}

func startProxy(t *testing.T, upstream string) string { return serve(t, NewServer(New(upstream))) }

func TestForwardsToMock(t *testing.T) {
	m, err := mock.Start("127.0.0.1:0", mock.Options{Name: "up", StreamEvents: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	addr := startProxy(t, m.Addr())

	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + "/v1/chat/completions")
	req.Header.SetMethod("POST")
	req.SetBodyString(`{"model":"m"}`)
	for range 3 { // reuses pooled connections
		if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != 200 || string(resp.Header.Peek("X-Mock-Name")) != "up" ||
			!strings.Contains(string(resp.Body()), `"object":"chat.completion"`) {
			t.Fatalf("%d %s", resp.StatusCode(), resp.Body())
		}
	}
	req.SetBodyString(`{"model":"m","stream":true}`)
	if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(resp.Body()), "data: "); n != 4 || !strings.HasSuffix(string(resp.Body()), "data: [DONE]\n\n") {
		t.Fatalf("stream through proxy: %d events: %s", n, resp.Body())
	}
	if st := m.Stats(); st.Requests != 4 {
		t.Fatalf("mock saw %d requests, want 4", st.Requests)
	}
}

// TestStreamsEventsAsTheyArrive proves the proxy does not buffer a stream:
// the upstream holds its second event until the client has read the first
// through the proxy, so a buffering proxy would never deliver it.
func TestStreamsEventsAsTheyArrive(t *testing.T) {
	gotFirst := make(chan struct{})
	up := serve(t, &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if string(ctx.RequestURI()) != "/v1/a/../b?x=%2F" {
			t.Errorf("upstream saw %q; the path must pass byte for byte", ctx.RequestURI())
		}
		ctx.SetContentType("text/event-stream")
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			_, _ = w.WriteString("data: one\n\n")
			_ = w.Flush()
			select {
			case <-gotFirst:
			case <-time.After(5 * time.Second):
			}
			_, _ = w.WriteString("data: [DONE]\n\n")
			_ = w.Flush()
		})
	}})
	addr := startProxy(t, up)

	c := &fasthttp.HostClient{Addr: addr, StreamResponseBody: true, DisablePathNormalizing: true}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + "/v1/a/../b?x=%2F")
	req.Header.SetMethod("POST")
	req.SetBodyString(`{"model":"m","stream": true}`)
	start := time.Now()
	if err := c.Do(req, resp); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.BodyStream())
	line, err := r.ReadString('\n')
	if err != nil || line != "data: one\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	if time.Since(start) > 4*time.Second {
		t.Fatal("first event only arrived when the upstream gave up waiting: the proxy buffered it")
	}
	close(gotFirst)
	rest := make([]byte, 64)
	n, _ := r.Read(rest)
	for n < len("\ndata: [DONE]\n\n") {
		m, err := r.Read(rest[n:])
		if err != nil {
			break
		}
		n += m
	}
	if string(rest[:n]) != "\ndata: [DONE]\n\n" {
		t.Fatalf("rest %q", rest[:n])
	}
}

func TestUpstreamDownIs502(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	addr := startProxy(t, dead)
	code, body, err := fasthttp.Post(nil, "http://"+addr+"/v1/chat/completions", nil)
	if err != nil || code != 502 || !strings.HasPrefix(string(body), "bad gateway") {
		t.Fatalf("%d %q %v", code, body, err)
	}
}

// TestIsStreamLooksAtTheEdgesOnly: the flag is found before or after a
// large messages array and from an Accept header; one buried in the middle
// of a large body is not looked for (the body is never scanned whole).
func TestIsStreamLooksAtTheEdgesOnly(t *testing.T) {
	big := strings.Repeat(`{"role":"user","content":"hello"},`, 4000)
	cases := []struct {
		accept, body string
		want         bool
	}{
		{"", `{"model":"m","stream":true,"messages":[]}`, true},
		{"", `{"model":"m","messages":[` + big + `{}],"stream": true}`, true},
		{"", `{"stream":true,"model":"m","messages":[` + big + `{}]}`, true},
		{"", `{"model":"m","messages":[` + big + `{}],"stream":false}`, false},
		{"", `{"model":"m","messages":[` + big + `{"stream":true}` + big + `{}]}`, false},
		{"text/event-stream", `{"model":"m","messages":[]}`, true},
		{"application/json", `{"model":"m","messages":[]}`, false},
	}
	for i, c := range cases {
		var req fasthttp.Request
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		req.SetBodyString(c.body)
		if got := isStream(&req); got != c.want {
			t.Errorf("case %d: isStream = %v, want %v", i, got, c.want)
		}
	}
}
