package hotpath

import (
	"bytes"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/switchyard/switchyard/bench/bareproxy"
	"github.com/switchyard/switchyard/upstream"
)

// Reproduce: go test -run '^$' -bench 'BenchmarkHandlerBodies' -benchtime 2s ./hotpath/

// bodySizes are the request bodies issue 12 measures the gateway at.
var bodySizes = []int{1 << 10, 16 << 10, 128 << 10, 1 << 20}

// BenchmarkHandlerBodies sends realistic chat bodies (chatBody) of each size
// through the whole gateway (its fasthttp server on an in-memory listener,
// the walk, an upstream on loopback TCP answering a small completion), and
// its baseline twin, the bench's bare proxy, the same way. Client, gateway
// and upstream share the process, so ns/op is the sum of all three: compare
// the two rows of one size (the difference is the gateway's own cost), and
// B/op for copies made per request.
func BenchmarkHandlerBodies(b *testing.B) {
	up := startConstUpstream(b)
	for _, size := range bodySizes {
		body := bytes.Replace(chatBody(size), []byte(`"stream":true`), []byte(`"stream":false`), 1)
		b.Run(strconv.Itoa(size>>10)+"KB/switchyard", func(b *testing.B) {
			pool := upstream.NewPool()
			st, err := Build(mustParse(b, `
server: {max_request_bytes: 10485760}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://`+up+`/v1", api_key: k}
`), pool, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			g := New(st)
			benchBodies(b, NewServer(g, quietLogger{}, false), body)
		})
		b.Run(strconv.Itoa(size>>10)+"KB/bareproxy", func(b *testing.B) {
			benchBodies(b, bareproxy.NewServer(bareproxy.New(up)), body)
		})
	}
}

// benchBodies serves srv on an in-memory listener and posts body to it from
// 8 concurrent clients, with the headers hdr (name, value pairs).
func benchBodies(b *testing.B, srv *fasthttp.Server, body []byte, hdr ...string) {
	srv.Logger = quietLogger{}
	ln := fasthttputil.NewInmemoryListener()
	go srv.Serve(ln)     //nolint:errcheck // ends at Shutdown
	defer srv.Shutdown() //nolint:errcheck
	client := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }, ReadTimeout: 10 * time.Second}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		for pb.Next() {
			req.Reset()
			req.Header.SetMethod("POST")
			req.SetRequestURI("http://gateway/v1/chat/completions")
			req.Header.SetContentType("application/json")
			req.SetBodyRaw(body)
			for i := 0; i+1 < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
				b.Fatalf("%v %d %s", err, resp.StatusCode(), resp.Body())
			}
		}
	})
}

// startConstUpstream serves a fixed ~300-byte completion on loopback TCP
// and returns its address.
func startConstUpstream(b *testing.B) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"The gateway routes on four fields and forwards the rest."},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1000,"completion_tokens":12,"total_tokens":1012}}`)
	srv := &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) {
		rc.SetContentType("application/json")
		rc.SetBody(answer)
	}, Logger: quietLogger{}, MaxRequestBodySize: 16 << 20}
	go srv.Serve(ln) //nolint:errcheck // ends at Shutdown
	b.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}
