package hotpath

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/bench/bareproxy"
	"github.com/switchyard/switchyard/internal/cputime"
	"github.com/switchyard/switchyard/upstream"
)

// Reproduce: go test -run '^$' -bench BenchmarkLongStreams -benchtime 1x ./hotpath/

// BenchmarkLongStreams holds 500 concurrent streams of 50 events 20 ms
// apart through the gateway, and through its baseline twin the bare proxy,
// all in one process over loopback TCP. B/stream is what the process's heap
// and goroutine stacks grew by while the streams were open, per stream
// (the client's and the upstream's shares are the same in both rows);
// ns/event is the process's CPU time per relayed event. With
// SWITCHYARD_STREAMS_HEAP=FILE each row writes a heap profile mid-run to
// FILE.<row>.
func BenchmarkLongStreams(b *testing.B) {
	const streams, events = 500, 50
	up := startStreamUpstream(b, events, 20*time.Millisecond)
	b.Run("switchyard", func(b *testing.B) {
		pool := upstream.NewPool()
		st, err := Build(mustParse(b, `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: a}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://`+up+`/v1", api_key: k, concurrency: {max_concurrency: 2000}}
`), pool, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		benchStreams(b, NewServer(New(st), quietLogger{}, false), streams, events)
	})
	b.Run("bareproxy", func(b *testing.B) {
		benchStreams(b, bareproxy.NewServer(bareproxy.New(up)), streams, events)
	})
}

func benchStreams(b *testing.B, srv *fasthttp.Server, streams, events int) {
	srv.Logger = quietLogger{}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)     //nolint:errcheck // ends at Shutdown
	defer srv.Shutdown() //nolint:errcheck
	client := &fasthttp.Client{MaxConnsPerHost: streams * 2, ReadTimeout: 30 * time.Second, StreamResponseBody: true}
	body := []byte(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	var perStream, stacks, perEvent float64
	for b.Loop() {
		runtime.GC()
		var m0 runtime.MemStats
		runtime.ReadMemStats(&m0)
		cpu0 := cputime.Process()
		var wg sync.WaitGroup
		var mu sync.Mutex
		got := 0
		for range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.Header.SetMethod("POST")
				req.SetRequestURI("http://" + ln.Addr().String() + "/v1/chat/completions")
				req.SetBody(body)
				resp.StreamBody = true
				if err := client.Do(req, resp); err != nil {
					b.Error(err)
					return
				}
				br := bufio.NewReader(resp.BodyStream())
				n := 0
				for {
					line, err := br.ReadSlice('\n')
					if bytes.HasPrefix(line, []byte("data: ")) {
						n++
					}
					if err != nil {
						break
					}
				}
				mu.Lock()
				got += n
				mu.Unlock()
			}()
		}
		time.Sleep(time.Duration(events) * 20 * time.Millisecond / 2)
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		if f := os.Getenv("SWITCHYARD_STREAMS_HEAP"); f != "" {
			// A heap profile with the streams open, for go tool pprof
			// -sample_index=inuse_space.
			if out, err := os.Create(f + "." + b.Name()[strings.LastIndexByte(b.Name(), '/')+1:]); err == nil {
				pprof.Lookup("heap").WriteTo(out, 0) //nolint:errcheck
				out.Close()                          //nolint:errcheck
			}
		}
		wg.Wait()
		cpu := cputime.Process() - cpu0
		if got != streams*(events+1) {
			b.Fatalf("%d events received, want %d", got, streams*(events+1))
		}
		perStream = float64(int64(m1.HeapInuse+m1.StackInuse)-int64(m0.HeapInuse+m0.StackInuse)) / float64(streams)
		stacks = float64(int64(m1.StackInuse)-int64(m0.StackInuse)) / float64(streams)
		perEvent = float64(cpu) / float64(got)
	}
	b.ReportMetric(perStream, "B/stream")
	b.ReportMetric(stacks, "stack-B/stream")
	b.ReportMetric(perEvent, "ns/event")
}

// startStreamUpstream serves chat streams of events chunks interval apart
// on loopback TCP and returns its address.
func startStreamUpstream(b *testing.B, events int, interval time.Duration) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) {
		rc.SetContentType("text/event-stream")
		rc.SetBodyStreamWriter(func(w *bufio.Writer) {
			for i := range events {
				time.Sleep(interval)
				w.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"token ` +
					strconv.Itoa(i) + ` of the answer"},"finish_reason":null}]}` + "\n\n") //nolint:errcheck
				if w.Flush() != nil {
					return
				}
			}
			w.WriteString("data: [DONE]\n\n") //nolint:errcheck
			w.Flush()                         //nolint:errcheck
		})
	}, Logger: quietLogger{}}
	go srv.Serve(ln) //nolint:errcheck // ends at Shutdown
	b.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}
