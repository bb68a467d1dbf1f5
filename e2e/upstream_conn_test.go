package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
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
// counted towards the breaker. The discards are counted.
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
		resp, body := g.rawPost(t, "/v1/chat/completions", chatBody("m", false))
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
