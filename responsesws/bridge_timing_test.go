package responsesws

import (
	"bufio"
	"io"
	"testing"

	"github.com/valyala/fasthttp"
)

// What the in-process hop costs (docs/design.md, Responses over
// WebSocket): a fasthttp.Server whose handler streams n SSE events, each
// flushed as the gateway flushes them, reached through open and read with
// sseReader, as a socket does. BenchmarkBridgeResponse is the cost per
// response (socketpair, ServeConn, request written and parsed, head read,
// one event); BenchmarkBridgeEvent the cost per relayed event.

func sseServer(events int, data []byte) *fasthttp.Server {
	return &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) {
		rc.SetContentType("text/event-stream")
		rc.SetBodyStreamWriter(func(w *bufio.Writer) {
			for range events {
				w.WriteString("event: response.output_text.delta\ndata: ") //nolint:errcheck
				w.Write(data)                                              //nolint:errcheck
				w.WriteString("\n\n")                                      //nolint:errcheck
				if w.Flush() != nil {
					return
				}
			}
		})
	}}
}

var benchEvent = []byte(`{"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" token"}`)

func bridgeOnce(b *testing.B, srv *fasthttp.Server, body []byte) int {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/responses")
	req.Header.SetHost("gateway")
	req.SetConnectionClose()
	req.SetBody(body)
	ex, err := open(srv, req, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ex.close()
	r := sseReader{r: bufio.NewReaderSize(ex.resp.BodyStream(), 32<<10), max: 1 << 20}
	n := 0
	for {
		d, err := r.next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		if len(lookup(d, "type")) == 0 {
			b.Fatal("no type")
		}
		n++
	}
}

func BenchmarkBridgeResponse(b *testing.B) {
	srv := sseServer(1, benchEvent)
	body := []byte(`{"model":"gpt-5","stream":true,"input":[{"role":"user","content":"hi"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if bridgeOnce(b, srv, body) != 1 {
			b.Fatal("lost the event")
		}
	}
}

func BenchmarkBridgeEvent(b *testing.B) {
	const perResponse = 1000
	srv := sseServer(perResponse, benchEvent)
	body := []byte(`{"model":"gpt-5","stream":true,"input":"hi"}`)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n += bridgeOnce(b, srv, body)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
	b.ReportMetric(float64(len(benchEvent)), "bytes/event")
}
