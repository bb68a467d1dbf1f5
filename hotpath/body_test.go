package hotpath

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// A client that declares a large Content-Length and sends almost nothing
// costs the gateway the bytes it sent, not the bytes it declared. fasthttp
// reading bodies itself reserved the declared length (rounded up to a power
// of two) at once: 16 such connections held 256 MiB.
func TestDeclaredBodyLengthIsNotReserved(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, strings.Replace(baseConfig, "max_request_bytes: 2048", "max_request_bytes: 12582912", 1), a, b, c)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const n = 16
	for range n {
		conn, err := netDial(tg.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close() // also keeps conn reachable (no finalizer closes it) until the end
		_, _ = conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 10485000\r\n\r\n{"))
	}
	time.Sleep(300 * time.Millisecond) // the server has read every header by now
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 32<<20 {
		t.Fatalf("%d connections that each sent one byte of a declared 10 MB body grew the heap by %d MiB", n, grew>>20)
	}
	noCalls(t, a, b, c)
}

// A chunked body is held to the same limit as it streams in.
func TestChunkedBodyOverTheLimit(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	chunk := strings.Repeat("x", 1000)
	var raw strings.Builder
	raw.WriteString("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
	for range 3 {
		fmt.Fprintf(&raw, "%x\r\n%s\r\n", len(chunk), chunk)
	}
	raw.WriteString("0\r\n\r\n")
	resp := rawExchange(t, tg, raw.String())
	want := envelope("request body is too large; at most 2048 bytes allowed", "invalid_request_error", "request_too_large")
	if resp.StatusCode() != 413 || string(resp.Body()) != want {
		t.Fatalf("got %d %s", resp.StatusCode(), resp.Body())
	}

	// Under the limit, a chunked body is read whole and routed.
	body := `{"model":"gpt-4o","messages":[]}`
	ok := rawExchange(t, tg, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+
		fmt.Sprintf("%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", 10, body[:10], len(body)-10, body[10:]))
	if ok.StatusCode() != fasthttp.StatusOK || a.calls.Load() != 1 {
		t.Fatalf("chunked body under the limit: %d %s, a called %d times", ok.StatusCode(), ok.Body(), a.calls.Load())
	}
	noCalls(t, b, c)
}

// A body that ends before its Content-Length is not a whole request: 400,
// and nothing reaches an upstream (fasthttp's body stream ends quietly when
// the client stops short past its 8 KiB pre-read).
func TestShortBodyIsRefused(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, strings.Replace(baseConfig, "max_request_bytes: 2048", "max_request_bytes: 1048576", 1), a, b, c)
	body := `{"model":"gpt-4o","pad":"` + strings.Repeat("x", 10000) + `"}`
	conn, err := net.Dial("tcp4", tg.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 20000\r\n\r\n" + body))
	_ = conn.(*net.TCPConn).CloseWrite()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var resp fasthttp.Response
	if err := resp.Read(bufioReader(conn)); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != 400 || !strings.Contains(string(resp.Body()), "cannot read the request body") {
		t.Fatalf("got %d %s", resp.StatusCode(), resp.Body())
	}
	noCalls(t, a, b, c)
}

// "100 Continue" is written before the handler runs. After a stream, whose
// end leaves the target's timeout as the connection's write deadline, and a
// pause longer than that, an Expect: 100-continue request on the same
// connection must still get its interim answer and its response.
func TestExpectContinueAfterAStaleWriteDeadline(t *testing.T) {
	a, b, c := threeMocks(t)
	cfg := strings.Replace(baseConfig, "    api_key: sk-a\n", "    api_key: sk-a\n    timeout: 200ms\n", 1)
	tg := startGateway(t, cfg, a, b, c)
	conn, err := net.Dial("tcp4", tg.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufioReader(conn)
	stream := `{"model":"gpt-4o","stream":true,"messages":[]}`
	_, _ = conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(stream)) + "\r\n\r\n" + stream))
	var resp fasthttp.Response
	if err := resp.Read(br); err != nil || resp.StatusCode() != 200 || !strings.Contains(string(resp.Body()), "[DONE]") {
		t.Fatalf("stream: %v %d %s", err, resp.StatusCode(), resp.Body())
	}
	time.Sleep(400 * time.Millisecond) // past the 200ms the stream left behind
	plain := `{"model":"gpt-4o","messages":[]}`
	_, _ = conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
		strconv.Itoa(len(plain)) + "\r\n\r\n"))
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 Continue") {
		t.Fatalf("interim answer %q, %v; want 100 Continue", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil { // the blank line after it
		t.Fatal(err)
	}
	_, _ = conn.Write([]byte(plain))
	resp.Reset()
	if err := resp.Read(br); err != nil || resp.StatusCode() != 200 {
		t.Fatalf("after 100 Continue: %v %d %s", err, resp.StatusCode(), resp.Body())
	}
}

// A small declared body is read into a buffer of its own size class, not a
// 4 KiB one: each request in flight holds its buffer, and a burst of them
// leaves that many pooled behind. A later larger body still fits.
func TestSmallBodyTakesASmallBuffer(t *testing.T) {
	for _, tc := range []struct {
		size, maxCap int
	}{{90, 512}, {600, 1 << 10}, {3000, 4 << 10}, {5000, 8 << 10}} {
		body := strings.Repeat("x", tc.size)
		var rc fasthttp.RequestCtx
		rc.Request.SetBodyStream(strings.NewReader(body), len(body))
		var bb *bodyBuf
		got, err := readBody(&rc, 10<<20, &bb)
		if err != nil || string(got) != body {
			t.Fatalf("size %d: %v, %d bytes read", tc.size, err, len(got))
		}
		if c := cap(bb.b); c > tc.maxCap {
			t.Errorf("size %d: a %d-byte buffer, want at most %d", tc.size, c, tc.maxCap)
		}
		// The same scratch then meets a larger body.
		big := strings.Repeat("y", 20000)
		rc.Request.SetBodyStream(strings.NewReader(big), len(big))
		if got, err := readBody(&rc, 10<<20, &bb); err != nil || string(got) != big {
			t.Fatalf("after size %d, a 20000-byte body: %v, %d bytes read", tc.size, err, len(got))
		}
	}
}
