//go:build linux

package upstream

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// bufConn holds a TLS server's writes so that two responses leave in one
// TCP write, as a server writing a stray answer right behind the real one
// does.
type bufConn struct {
	net.Conn
	b  bytes.Buffer
	on bool
}

func (c *bufConn) Write(p []byte) (int, error) {
	if !c.on {
		return c.Conn.Write(p)
	}
	return c.b.Write(p)
}
func (c *bufConn) flush() error { _, err := c.Conn.Write(c.b.Bytes()); c.b.Reset(); return err }

// A stray response right behind the real one on an https connection is
// pulled into crypto/tls with it, where the socket peek cannot see it: the
// connection must be discarded when the answer is done, not lent to the next
// request, which would read the stray as its own answer. The real answer is
// buffered, or a stream read to its end.
func TestTLSStrayResponseIsNotTheNextAnswer(t *testing.T) {
	t.Run("buffered", func(t *testing.T) { tlsStrayBehind(t, false) })
	t.Run("stream", func(t *testing.T) { tlsStrayBehind(t, true) })
}

// streamAnswer is a whole chunked SSE answer whose one event says s.
func streamAnswer(s string) string {
	ev := "data: {\"id\":\"" + s + "\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + s + "\"}}]}\n\n"
	done := "data: [DONE]\n\n"
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", len(ev), ev, len(done), done)
}

// tlsStrayBehind: the first answer (streamed when stream) on the first
// connection has a stray response right behind it; the next walk, buffered,
// must get its own answer.
func tlsStrayBehind(t *testing.T, stream bool) {
	cert := httptest.NewTLSServer(http.NotFoundHandler())
	cfg := cert.TLS.Clone()
	cert.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ans := func(s string) string {
		b := `{"id":"` + s + `","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + s + `"},"finish_reason":"stop"}]}`
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
	}
	serve := func(raw net.Conn, first bool) {
		bc := &bufConn{Conn: raw}
		tc := tls.Server(bc, cfg)
		br := bufio.NewReader(tc)
		for i := 0; ; i++ {
			bc.on = false
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			var body [1 << 16]byte
			req.Body.Read(body[:]) //nolint:errcheck
			bc.on = true
			switch {
			case first && i == 0 && stream:
				tc.Write([]byte(streamAnswer("TENANT_A"))) //nolint:errcheck
				tc.Write([]byte(ans("STRAY_FOR_A")))       //nolint:errcheck
			case first && i == 0:
				tc.Write([]byte(ans("TENANT_A")))    //nolint:errcheck
				tc.Write([]byte(ans("STRAY_FOR_A"))) //nolint:errcheck
			default:
				tc.Write([]byte(ans("TENANT_B"))) //nolint:errcheck
			}
			if bc.flush() != nil {
				return
			}
		}
	}
	go func() {
		for first := true; ; first = false {
			raw, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(raw, first)
		}
	}()
	tg := insecureTLSTarget(t, "https://"+ln.Addr().String()+"/v1", "sk-aaaaaaaa", nil)
	h := &harness{t: t, clk: realClock}
	for i, want := range []string{"TENANT_A", "TENANT_B"} {
		time.Sleep(100 * time.Millisecond) // the stray has arrived
		rc, res := h.walk(chatCall(stream && i == 0), []*Target{tg}, 5*time.Second, nil)
		var body string
		if res.Stream {
			body = streamBody(t, rc) // read to its end: the connection is given back
		} else {
			body = string(rc.Response.Body())
		}
		if res.Status != 200 || !strings.Contains(body, want) {
			t.Fatalf("walk %d: status %d body %s, want %s", i, res.Status, body, want)
		}
	}
	if n := tg.ConnDiscards(int(discardUnsolicited)); n != 1 {
		t.Fatalf("unsolicited discards %d, want 1", n)
	}
}
