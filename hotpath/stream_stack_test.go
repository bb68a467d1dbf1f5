//go:build !race

package hotpath

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// TestCommittedStreamStack: serving a streamed chat completion, from the
// new upstream connection it opens to the stream's end and a second stream
// on the same client connection, never takes the connection goroutine's
// stack over 8 KiB. The goroutine relays a committed stream for its whole
// life, and a stack grown to 16 KiB stays so (see upstream/dial.go): at
// 1,000 open streams that was 8 MiB more stack and ~10 KiB more RSS per
// stream than the bare relay. The scenario runs in a child process with
// debug.SetMaxStack(8192), where any goroutine that needs more crashes it
// with the call chain that did; not under the race detector, whose
// instrumentation makes every frame larger.
func TestCommittedStreamStack(t *testing.T) {
	if os.Getenv("SWITCHYARD_STACK_CHILD") == "1" {
		streamStackScenario(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCommittedStreamStack$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SWITCHYARD_STACK_CHILD=1", "GOTRACEBACK=single")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if len(out) > 6000 {
			out = out[:6000]
		}
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// streamStackScenario serves streams through the gateway, with the
// daemon's metrics observer and Finished hook, under an 8 KiB stack limit.
func streamStackScenario(t *testing.T) {
	const streams = 20
	release := make(chan struct{})
	up := heldStreamUpstream(t, release)
	st, err := Build(mustParse(t, `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://`+up+`/v1", api_key: k}
`), upstream.NewPool(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	g := New(st)
	m := telemetry.NewMetrics()
	g.Observer = m
	g.Finished = m.Finished
	srv := NewServer(g, quietLogger{}, false)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)     //nolint:errcheck // ends at Shutdown
	defer srv.Shutdown() //nolint:errcheck

	debug.SetMaxStack(8 << 10)
	runStreams(t, ln.Addr().String(), release, streams)
}

// runStreams serves two rounds of streams through the gateway at addr.
func runStreams(t *testing.T, addr string, release chan<- struct{}, streams int) {
	var err error
	body := `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	send := func(c net.Conn) {
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body) //nolint:errcheck
	}
	cs := make([]net.Conn, streams)
	readers := make([]*bufio.Reader, streams)
	for round := range 2 {
		// Each stream of the first round opens its own upstream connection
		// (the others are busy); the second reuses them.
		for i := range cs {
			if round == 0 {
				if cs[i], err = net.Dial("tcp4", addr); err != nil {
					t.Fatal(err)
				}
				defer cs[i].Close()
				readers[i] = bufio.NewReader(cs[i])
			}
			send(cs[i])
			readUntil(t, cs[i], readers[i], "chat.completion.chunk")
		}
		for range cs {
			release <- struct{}{}
		}
		for i := range cs {
			readUntil(t, cs[i], readers[i], "[DONE]")
		}
	}
}

// readUntil reads c through br up to a line containing s.
func readUntil(t *testing.T, c net.Conn, br *bufio.Reader, s string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	for {
		line, err := br.ReadString('\n')
		if strings.Contains(line, s) {
			return
		}
		if err != nil {
			t.Fatalf("reading for %q: %v", s, err)
		}
	}
}

// heldStreamUpstream serves chat streams on loopback, one goroutine per
// connection: each request gets its head and first event at once, and
// [DONE] once release is received.
func heldStreamUpstream(t *testing.T, release <-chan struct{}) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	const event = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}` + "\n\n"
	const done = "data: [DONE]\n\n"
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					n := 0
					for {
						line, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
						if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "content-length") {
							n, _ = strconv.Atoi(strings.TrimSpace(v))
						}
					}
					if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
						return
					}
					var w bytes.Buffer
					fmt.Fprintf(&w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(event), event)
					if _, err := c.Write(w.Bytes()); err != nil {
						return
					}
					<-release
					if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n0\r\n\r\n", len(done), done); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}
