package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// completion is an OpenAI chat completion whose content is text.
func completion(text string) string {
	return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		text + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
}

// TestIdleClosedConnectionIsNotWrittenTo: an upstream that closes idle
// keep-alive connections after 1 s, asked every 1.5 s, must answer every
// request; before the fix every other one failed (200 502 200 502) and
// counted towards the breaker. Buffered and streamed requests alternate: a
// stream read to its end leaves its connection in the pool too, and one
// meets the closed connection left by the buffered answer before it. The
// discards are counted.
func TestIdleClosedConnectionIsNotWrittenTo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := &fasthttp.Server{
		IdleTimeout: time.Second,
		Handler: func(rc *fasthttp.RequestCtx) {
			n := calls.Add(1)
			if strings.Contains(string(rc.PostBody()), `"stream":true`) {
				rc.SetContentType("text/event-stream")
				rc.SetBodyString(fmt.Sprintf("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answer %d\"}}]}\n\ndata: [DONE]\n\n", n))
				return
			}
			rc.SetContentType("application/json")
			rc.SetBodyString(completion(fmt.Sprintf("answer %d", n)))
		},
	}
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { _ = srv.Shutdown() })

	g := startRawGateway(t, "openai", "http://"+ln.Addr().String()+"/v1", "sk-t", "5s", "")
	var got []int
	for i := 0; i < 4; i++ {
		if i > 0 {
			time.Sleep(1500 * time.Millisecond)
		}
		resp, body := g.rawPost(t, "/v1/chat/completions", chatBody("m", i%2 == 1))
		got = append(got, resp.StatusCode)
		if resp.StatusCode == 200 && !strings.Contains(body, fmt.Sprintf("answer %d", calls.Load())) {
			t.Errorf("request %d got %s", i, body)
		}
	}
	if fmt.Sprint(got) != "[200 200 200 200]" {
		t.Fatalf("statuses %v, want [200 200 200 200]", got)
	}
	if v := g.metric(t, `switchyard_upstream_conn_discards_total{target="t",reason="closed"}`); v != "3" {
		t.Fatalf("closed discards = %q, want 3", v)
	}
}

// TestUnsolicitedResponseIsNeverAnAnswer: an upstream that writes an extra,
// unsolicited response on the keep-alive connection after each real one
// must not make the next client read it: every client gets its own answer.
func TestUnsolicitedResponseIsNeverAnAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var calls atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = req.Body.Read(make([]byte, 1<<16))
					n := calls.Add(1)
					body := completion(fmt.Sprintf("answer %d", n))
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
					// The stray one comes a moment later, as from a buggy
					// server or a proxy in between.
					time.Sleep(50 * time.Millisecond)
					stray := completion("STRAY for someone else")
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(stray), stray)
				}
			}(c)
		}
	}()

	g := startRawGateway(t, "openai", "http://"+ln.Addr().String()+"/v1", "sk-t", "5s", "")
	for i := 0; i < 4; i++ {
		time.Sleep(200 * time.Millisecond) // the stray answer is waiting by now
		resp, body := g.rawPost(t, "/v1/chat/completions", chatBody("m", false))
		if resp.StatusCode != 200 || strings.Contains(body, "STRAY") || !strings.Contains(body, fmt.Sprintf("answer %d", calls.Load())) {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	if v := g.metric(t, `switchyard_upstream_conn_discards_total{target="t",reason="unsolicited"}`); v != "3" {
		t.Fatalf("unsolicited discards = %q, want 3", v)
	}
}

// TestTLSStrayAfterStreamIsNeverAnAnswer: an https upstream that ends a
// stream and writes a stray response right behind it, in the same TCP
// write, has the stray pulled in with the stream's last bytes, where the
// socket peek before reuse cannot see it: into fasthttp's read buffer when
// both share a TLS record, into crypto/tls when the stray has a record of
// its own. The connection must be discarded, counted unsolicited, and the
// next client must get its own answer.
func TestTLSStrayAfterStreamIsNeverAnAnswer(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	cfg := srv.TLS.Clone()
	pemPath := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(pemPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	// The gateway verifies the upstream against the system roots, which
	// crypto/x509 reads from SSL_CERT_FILE once per process, at the first
	// verification: no other test of this package talks TLS.
	t.Setenv("SSL_CERT_FILE", pemPath)
	t.Run("one record", func(t *testing.T) { tlsStrayAfterStream(t, cfg, false) })
	t.Run("own record", func(t *testing.T) { tlsStrayAfterStream(t, cfg, true) })
}

// heldWrites holds a connection's writes until flush, so that several TLS
// records leave in one TCP write.
type heldWrites struct {
	net.Conn
	buf  []byte
	hold bool
}

func (c *heldWrites) Write(p []byte) (int, error) {
	if c.hold {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *heldWrites) flush() error {
	c.hold = false
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

func tlsStrayAfterStream(t *testing.T, cfg *tls.Config, ownRecord bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	ev := "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"TENANT_A\"}}]}\n\ndata: [DONE]\n\n"
	streamAns := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(ev), ev)
	plain := func(s string) string {
		b := completion(s)
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
	}
	var conns atomic.Int32
	go func() {
		for {
			raw, err := ln.Accept()
			if err != nil {
				return
			}
			first := conns.Add(1) == 1
			go func(raw net.Conn) {
				defer raw.Close()
				_ = raw.SetDeadline(time.Now().Add(20 * time.Second)) // bounded
				hw := &heldWrites{Conn: raw}
				tc := tls.Server(hw, cfg)
				br := bufio.NewReader(tc)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = req.Body.Read(make([]byte, 1<<16))
					hw.hold = true
					switch {
					case first && i == 0 && ownRecord:
						_, _ = tc.Write([]byte(streamAns))
						_, _ = tc.Write([]byte(plain("STRAY_FOR_A")))
					case first && i == 0:
						_, _ = tc.Write([]byte(streamAns + plain("STRAY_FOR_A")))
					default:
						_, _ = tc.Write([]byte(plain("TENANT_B")))
					}
					if hw.flush() != nil {
						return
					}
				}
			}(raw)
		}
	}()

	g := startRawGateway(t, "openai", "https://"+ln.Addr().String()+"/v1", "sk-t", "5s", "")
	resp, body := g.rawPost(t, "/v1/chat/completions", chatBody("m", true))
	if resp.StatusCode != 200 || !strings.Contains(body, "TENANT_A") || !strings.Contains(body, "[DONE]") {
		t.Fatalf("stream: %d %s", resp.StatusCode, body)
	}
	time.Sleep(100 * time.Millisecond) // the connection is back in the pool, or discarded
	resp, body = g.rawPost(t, "/v1/chat/completions", chatBody("m", false))
	if resp.StatusCode != 200 || strings.Contains(body, "STRAY") || !strings.Contains(body, "TENANT_B") {
		t.Fatalf("next client: %d %s", resp.StatusCode, body)
	}
	if v := g.metric(t, `switchyard_upstream_conn_discards_total{target="t",reason="unsolicited"}`); v != "1" {
		t.Fatalf("unsolicited discards = %q, want 1", v)
	}
}
