package hotpath

import (
	"fmt"
	"runtime"
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
		_, _ = conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10485000\r\n\r\n{"))
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
	raw.WriteString("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
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
	ok := rawExchange(t, tg, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+
		fmt.Sprintf("%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", 10, body[:10], len(body)-10, body[10:]))
	if ok.StatusCode() != fasthttp.StatusOK || a.calls.Load() != 1 {
		t.Fatalf("chunked body under the limit: %d %s, a called %d times", ok.StatusCode(), ok.Body(), a.calls.Load())
	}
	noCalls(t, b, c)
}
