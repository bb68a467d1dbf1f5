package hotpath

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// Each test here pins one behaviour of fasthttp that fasthttp_reliance.go
// lists: an upgrade that changes it fails here first.

// serveOne serves srv on an in-memory listener, writes req on a new
// connection and returns what comes back until the server closes it.
func serveOne(t *testing.T, srv *fasthttp.Server, req string) string {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	go srv.Serve(ln) //nolint:errcheck
	defer ln.Close()
	c, err := ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(bufio.NewReader(c))
	return string(b)
}

// TestRelianceHeaderReceivedBeforeBody: a request whose HeaderReceived
// declared the body empty and the connection closing reaches the handler
// at once, though its 1 MiB body never comes, with and without
// StreamRequestBody; and the connection is closed after the answer.
func TestRelianceHeaderReceivedBeforeBody(t *testing.T) {
	for _, stream := range []bool{true, false} {
		srv := &fasthttp.Server{
			StreamRequestBody: stream,
			ReduceMemoryUsage: !stream,
			HeaderReceived: func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
				h.SetContentLength(0)
				h.SetConnectionClose()
				return fasthttp.RequestConfig{}
			},
			Handler: func(rc *fasthttp.RequestCtx) { rc.SetBodyString("handled") },
		}
		got := serveOne(t, srv, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 200") || !strings.HasSuffix(got, "handled") ||
			!strings.Contains(got, "Connection: close") {
			t.Errorf("stream=%v: %q, want the handler's answer before any body byte, then a close", stream, got)
		}
	}
}

// TestRelianceReadErrorClasses: every malformed request below gets the
// class ClassifyReadError gave it when it was written (fasthttp's error
// texts, read for their fixed parts, are still what it reads).
func TestRelianceReadErrorClasses(t *testing.T) {
	post := "POST / HTTP/1.1\r\nHost: x\r\n"
	cases := []struct {
		req  string
		want ReadErrorClass
	}{
		{post + "A: b\x00\r\n\r\n", ReadErrorHeaderField},
		{post + "A\t: b\r\n\r\n", ReadErrorHeaderField},
		{post + "A\x0b: b\r\n\r\n", ReadErrorHeaderField},
		{"POST / HTTP/1.1x\r\nHost: x\r\n\r\n", ReadErrorRequestLine},
		{"P\x01ST / HTTP/1.1\r\nHost: x\r\n\r\n", ReadErrorRequestLine},
		{"POST /\x01 HTTP/1.1\r\nHost: x\r\n\r\n", ReadErrorRequestLine},
		{post + "Content-Length: x\r\n\r\n", ReadErrorFraming},
		{post + "Content-Length: 1\r\nContent-Length: 2\r\n\r\n", ReadErrorFraming},
		{post + "Transfer-Encoding: gzip\r\n\r\n", ReadErrorFraming},
		{post + "Host: y\r\n\r\n", ReadErrorHost},
		{post + "A: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", ReadErrorHeaderSize},
	}
	for _, tc := range cases {
		var got error
		srv := &fasthttp.Server{
			SecureErrorLogMessage: true,
			ReadBufferSize:        4 << 10,
			Logger:                quietLogger{},
			Handler:               func(rc *fasthttp.RequestCtx) {},
			ErrorHandler:          func(rc *fasthttp.RequestCtx, err error) { got = err },
		}
		serveOne(t, srv, tc.req)
		if c := ClassifyReadError(got); c != tc.want {
			t.Errorf("%.60q: fasthttp's error %v is class %v, want %v", tc.req, got, c, tc.want)
		}
	}
}
