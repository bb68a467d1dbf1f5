package hotpath

import (
	"bufio"
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestLargeHeadersOnKeepAlive sends, on one keep-alive connection, several
// requests each carrying a 4096-byte X-Gateway-Metadata (docs/routing.md, 2
// maximum) plus the headers real clients add (bearer token, cookies,
// tracing, user agent): over 7 KiB of head. Every one must be read whole
// and routed by its metadata, with server.reduce_memory_usage off (the
// connection keeps its read buffer) and on (the buffer goes back to the
// pool between requests, so the later requests use a re-acquired one).
func TestLargeHeadersOnKeepAlive(t *testing.T) {
	for _, reduce := range []bool{false, true} {
		t.Run(fmt.Sprintf("reduce_memory_usage=%v", reduce), func(t *testing.T) {
			testLargeHeadersOnKeepAlive(t, reduce)
		})
	}
}

func testLargeHeadersOnKeepAlive(t *testing.T, reduce bool) {
	ms := fiveMocks(t)
	cfg := strings.Replace(routingConfig, "server:\n", fmt.Sprintf("server:\n  reduce_memory_usage: %v\n", reduce), 1)
	tg := startGateway(t, cfg, ms...)
	if tg.srv.ReduceMemoryUsage != reduce {
		t.Fatalf("server ReduceMemoryUsage %v; want %v from the config", tg.srv.ReduceMemoryUsage, reduce)
	}
	prefix, suffix := `{"tier":"gold","pad":"`, `"}`
	meta := prefix + strings.Repeat("p", 4096-len(prefix)-len(suffix)) + suffix
	if len(meta) != 4096 {
		t.Fatalf("metadata is %d bytes", len(meta))
	}
	body := `{"model":"m-1","messages":[]}`
	head := "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost:8080\r\n" +
		"Authorization: Bearer sk-" + strings.Repeat("k", 160) + "\r\n" +
		"Cookie: session=" + strings.Repeat("c", 2600) + "\r\n" +
		"Traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n" +
		"User-Agent: OpenAI/Python 1.99.0 " + strings.Repeat("u", 200) + "\r\n" +
		"X-Gateway-Metadata: " + meta + "\r\n" +
		"Content-Type: application/json\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))
	if len(head) < 7<<10 {
		t.Fatalf("head is only %d bytes", len(head))
	}
	conn, err := netDial(tg.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	before := ms[3].calls.Load()
	const n = 3
	for i := range n {
		if _, err := conn.Write([]byte(head + body)); err != nil {
			t.Fatal(err)
		}
		var resp fasthttp.Response
		_ = bufioReader(conn) // sets the read deadline
		if err := resp.Read(br); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if resp.StatusCode() != 200 || string(resp.Header.Peek("X-Gateway-Rule")) != "3" {
			t.Fatalf("request %d: %d rule %q %s", i, resp.StatusCode(), resp.Header.Peek("X-Gateway-Rule"), resp.Body())
		}
	}
	if got := ms[3].calls.Load() - before; got != n {
		t.Errorf("target d got %d calls; want %d", got, n)
	}
}
