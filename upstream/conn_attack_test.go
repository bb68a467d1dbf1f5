//go:build linux

package upstream

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

// rawUpstream is an OpenAI-compatible upstream over raw TCP whose answer to
// request n (1-based, counted over all connections) is written by script.
type rawUpstream struct {
	ln     net.Listener
	reqs   atomic.Int32
	open   atomic.Int32 // connections not yet closed by the gateway
	script func(n int, body string, c net.Conn)
}

func startRawUpstream(t *testing.T, script func(n int, body string, c net.Conn)) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{ln: ln, script: script}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.open.Add(1)
			go func() {
				defer u.open.Add(-1)
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(20 * time.Second))
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					u.script(int(u.reqs.Add(1)), string(b), c)
				}
			}()
		}
	}()
	return u
}

func (u *rawUpstream) target(t *testing.T, attempts int) *Target {
	t.Helper()
	ct := config.Target{VirtualKey: "a", Provider: config.ProviderOpenAI, BaseURL: "http://" + u.ln.Addr().String() + "/v1",
		APIKey: "sk-aaaaaaaa", Timeout: 3 * time.Second, Retry: config.Retry{Attempts: attempts, InitialBackoffMs: 1},
		Concurrency: config.Concurrency{MaxConcurrency: 4, QueueSize: 4}}
	tg, err := NewPool().Target(&ct)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// rawAnswer is a whole buffered chat completion saying s.
func rawAnswer(s string) string {
	b := `{"id":"` + s + `","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + s + `"},"finish_reason":"stop"}]}`
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
}

func rawEvent(s string) string {
	return "data: {\"id\":\"" + s + "\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + s + "\"}}]}\n\n"
}

func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

// TestConnAttackStrayNeverAnswers: whatever the first answer on a
// connection (streamed or buffered, success or error, framed any way) and
// whatever stray response the upstream writes behind it (in the same write
// or a moment later), the next request gets its own answer.
func TestConnAttackStrayNeverAnswers(t *testing.T) {
	stray := rawAnswer("STRAY_FOR_A")
	cases := []struct {
		name   string
		stream bool
		first  func(c net.Conn)
	}{
		{"stream trailers", true, func(c net.Conn) {
			io.WriteString(c, sseHead+chunk(rawEvent("A"))+chunk("data: [DONE]\n\n")+"0\r\nX-Trailer: 1\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"stream content-length", true, func(c net.Conn) {
			b := rawEvent("A") + "data: [DONE]\n\n"
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s%s", len(b), b, stray)
		}},
		{"stream content-length 0", true, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 0\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"stream 204", true, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"stream 204 with a body", true, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello") //nolint:errcheck
		}},
		{"stream 205 content-length 0", true, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 205 Reset Content\r\nContent-Length: 0\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"stream 500", true, func(c net.Conn) {
			b := `{"error":{"message":"boom"}}`
			fmt.Fprintf(c, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s%s", len(b), b, stray)
		}},
		{"stream 400 chunked trailers", true, func(c net.Conn) {
			b := `{"error":{"message":"bad","type":"invalid_request_error"}}`
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+chunk(b)+"0\r\nX-T: 1\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"stream connection close", true, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"+chunk(rawEvent("A"))+chunk("data: [DONE]\n\n")+"0\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"stream events after done", true, func(c net.Conn) {
			io.WriteString(c, sseHead+chunk(rawEvent("A"))+chunk("data: [DONE]\n\n")+chunk(rawEvent("LATE"))+"0\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"stream terminator late", true, func(c net.Conn) {
			io.WriteString(c, sseHead+chunk(rawEvent("A"))+chunk("data: [DONE]\n\n")) //nolint:errcheck
			time.Sleep(200 * time.Millisecond)
			io.WriteString(c, "0\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"stream stray later", true, func(c net.Conn) {
			io.WriteString(c, sseHead+chunk(rawEvent("A"))+chunk("data: [DONE]\n\n")+"0\r\n\r\n") //nolint:errcheck
			time.Sleep(30 * time.Millisecond)
			io.WriteString(c, stray) //nolint:errcheck
		}},
		{"stream first event error", true, func(c net.Conn) {
			io.WriteString(c, sseHead+chunk(`data: {"error":{"message":"x","code":500}}`+"\n\n")+"0\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"stream without done", true, func(c net.Conn) {
			io.WriteString(c, sseHead+chunk(rawEvent("A"))+"0\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"stream interim 100", true, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"+sseHead+chunk(rawEvent("A"))+chunk("data: [DONE]\n\n")+"0\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"stream http/1.0", true, func(c net.Conn) {
			b := rawEvent("A") + "data: [DONE]\n\n"
			fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s%s", len(b), b, stray)
		}},
		{"stream gzip", true, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nxxxx"+stray) //nolint:errcheck
		}},
		{"buffered", false, func(c net.Conn) { io.WriteString(c, rawAnswer("A")+stray) }}, //nolint:errcheck
		{"buffered trailers", false, func(c net.Conn) {
			b := `{"id":"A","object":"chat.completion","choices":[]}`
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+chunk(b)+"0\r\nX-T: 1\r\n\r\n"+stray) //nolint:errcheck
		}},
		{"buffered 204", false, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n"+stray) }}, //nolint:errcheck
		{"buffered 500", false, func(c net.Conn) {
			b := `{"error":{"message":"boom"}}`
			fmt.Fprintf(c, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n\r\n%s%s", len(b), b, stray)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := startRawUpstream(t, func(n int, _ string, c net.Conn) {
				if n == 1 {
					tc.first(c)
					return
				}
				io.WriteString(c, rawAnswer(fmt.Sprintf("ANSWER_%d", n))) //nolint:errcheck
			})
			tg := u.target(t, 1)
			h := &harness{t: t, clk: realClock}
			obs := newRec()
			rc, res := h.walk(chatCall(tc.stream), []*Target{tg}, 5*time.Second, obs)
			if res.Stream {
				streamBody(t, rc)
				waitEnd(t, obs)
			}
			time.Sleep(100 * time.Millisecond) // any later stray has arrived
			rc, res = h.walk(chatCall(false), []*Target{tg}, 5*time.Second, nil)
			body := string(rc.Response.Body())
			want := fmt.Sprintf("ANSWER_%d", u.reqs.Load())
			if res.Status != 200 || strings.Contains(body, "STRAY") || !strings.Contains(body, want) {
				t.Fatalf("second walk: status %d body %s, want %s", res.Status, body, want)
			}
			if tg.Limiter().InFlight() != 0 {
				t.Fatal("slot held")
			}
		})
	}
}

// countObs counts attempts and stream ends by class.
type countObs struct {
	NopObserver
	mu       sync.Mutex
	ends     map[Class]int
	attempts map[Class]int
}

func (o *countObs) Attempt(_ *Target, c Class, _ int, _ time.Duration) {
	o.mu.Lock()
	o.attempts[c]++
	o.mu.Unlock()
}

func (o *countObs) StreamEnd(r Result, _ time.Duration) {
	o.mu.Lock()
	o.ends[r.Class]++
	o.mu.Unlock()
}

func (o *countObs) get(m map[Class]int, c Class) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return m[c]
}

// TestConnAttackDepartedBurst: a burst of streamed walks served by a real
// fasthttp server on TCP whose clients read to the end, leave after the
// first event, or leave before it: each departed client's upstream
// connection is closed (never pooled), each departure is counted canceled
// once, and no upstream connection or goroutine is left behind.
func TestConnAttackDepartedBurst(t *testing.T) {
	base := runtime.NumGoroutine()
	u := startRawUpstream(t, func(n int, body string, c net.Conn) {
		switch {
		case !strings.Contains(body, `"k-`):
			io.WriteString(c, rawAnswer(fmt.Sprintf("ANSWER_%d", n))) //nolint:errcheck
		case strings.Contains(body, `"k-end"`):
			io.WriteString(c, sseHead+chunk(rawEvent(fmt.Sprintf("E%d", n)))+chunk(rawEvent("x"))+chunk("data: [DONE]\n\n")+"0\r\n\r\n") //nolint:errcheck
		case strings.Contains(body, `"k-mid"`):
			io.WriteString(c, sseHead+chunk(rawEvent("first"))) //nolint:errcheck
			time.Sleep(3 * time.Second)
			io.WriteString(c, chunk("data: [DONE]\n\n")+"0\r\n\r\n"+rawAnswer("STRAY_MID")) //nolint:errcheck
		default: // "pre"
			time.Sleep(3 * time.Second)
			io.WriteString(c, sseHead+chunk(rawEvent("late"))+chunk("data: [DONE]\n\n")+"0\r\n\r\n"+rawAnswer("STRAY_PRE")) //nolint:errcheck
		}
	})
	tg := u.target(t, 2)
	obs := &countObs{ends: map[Class]int{}, attempts: map[Class]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Logger: quietLogger{}, WriteTimeout: 5 * time.Second, Handler: func(rc *fasthttp.RequestCtx) {
		call := chatCall(true)
		call.Body = append([]byte(nil), rc.PostBody()...)
		Walk(rc, call, []*Target{tg}, time.Now().Add(10*time.Second), obs)
	}}
	go srv.Serve(ln)     //nolint:errcheck
	defer srv.Shutdown() //nolint:errcheck

	kinds := []string{"end", "mid", "pre", "end"}
	var wg sync.WaitGroup
	for round := 0; round < 3; round++ {
		for _, k := range kinds {
			wg.Add(1)
			go func(k string) {
				defer wg.Done()
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				body := `{"model":"gpt-x","user":"k-` + k + `","stream":true,"messages":[]}`
				fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				br := bufio.NewReader(c)
				for k != "pre" {
					line, err := br.ReadString('\n')
					if err != nil {
						t.Errorf("%s: %v", k, err)
						return
					}
					if strings.Contains(line, "STRAY") {
						t.Errorf("%s: read a stray: %s", k, line)
					}
					if k == "mid" && strings.Contains(line, "first") || k == "end" && strings.Contains(line, "[DONE]") {
						break
					}
				}
				if k != "end" {
					time.Sleep(700 * time.Millisecond) // watched by now
				}
			}(k)
		}
		wg.Wait()
	}
	// 6 departures: each canceled once, the upstream connections closed.
	waitUntil(t, "departed streams ended", func() bool {
		return obs.get(obs.ends, ClassCanceled) == 3 && obs.get(obs.attempts, ClassCanceled) == 3 && tg.Limiter().InFlight() == 0
	})
	waitUntil(t, "departed connections closed", func() bool { return int(u.open.Load()) <= 4 })
	if n := obs.get(obs.ends, ClassOK); n != 6 {
		t.Errorf("ok stream ends %d, want 6", n)
	}
	if n := int(u.reqs.Load()); n != 12 {
		t.Errorf("%d upstream requests, want 12 (no retry of a departed call)", n)
	}
	// The pooled connections still answer their own requests.
	for i := 0; i < 4; i++ {
		h := &harness{t: t, clk: realClock}
		rc, res := h.walk(chatCall(false), []*Target{tg}, 5*time.Second, nil)
		if want := fmt.Sprintf("ANSWER_%d", u.reqs.Load()); res.Status != 200 || !strings.Contains(string(rc.Response.Body()), want) {
			t.Fatalf("after the burst: %d %s, want %s", res.Status, rc.Response.Body(), want)
		}
	}
	t.Logf("open upstream connections %d, discards closed %d unsolicited %d", u.open.Load(),
		tg.ConnDiscards(int(discardClosed)), tg.ConnDiscards(int(discardUnsolicited)))
	srv.Shutdown() //nolint:errcheck
	tg.client().CloseIdleConnections()
	// The upstream counts a connection until its handler returns, and the
	// last round's "mid" and "pre" handlers sleep 3 s before writing into
	// the connections the gateway closed under them.
	waitWithin(t, 5*time.Second, "upstream connections closed", func() bool { return u.open.Load() == 0 })
	waitUntil(t, "watcher idle", watcherIdle)
	waitUntil(t, "goroutines back", func() bool { return runtime.NumGoroutine() <= base+4 })
}

// TestConnAttackStreamRetryAndFailover: a streamed walk that retries on
// its member (a 503 with a stray behind it, then a first event that is an
// error with a stray behind it) and then fails over to the next member
// hands every connection with a stray behind it to nobody: the streamed
// answer and the next walk on each member are their own.
func TestConnAttackStreamRetryAndFailover(t *testing.T) {
	stray := rawAnswer("STRAY")
	a := startRawUpstream(t, func(n int, _ string, c net.Conn) {
		switch n {
		case 1:
			b := `{"error":{"message":"busy"}}`
			fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n\r\n%s%s", len(b), b, stray)
		case 2:
			io.WriteString(c, sseHead+chunk(`data: {"error":{"message":"x","code":503}}`+"\n\n")+chunk(rawEvent("NO"))+"0\r\n\r\n"+stray) //nolint:errcheck
		default:
			io.WriteString(c, rawAnswer(fmt.Sprintf("A_%d", n))) //nolint:errcheck
		}
	})
	b := startRawUpstream(t, func(n int, _ string, c net.Conn) {
		if n == 1 {
			io.WriteString(c, sseHead+chunk(rawEvent("B_1"))+chunk("data: [DONE]\n\n")+"0\r\n\r\n"+stray) //nolint:errcheck
			return
		}
		io.WriteString(c, rawAnswer(fmt.Sprintf("B_%d", n))) //nolint:errcheck
	})
	ta, tb := a.target(t, 2), b.target(t, 2)
	ta.Retry.OnStatusCodes = []int{503}
	h := &harness{t: t, clk: realClock}
	obs := newRec()
	rc, res := h.walk(chatCall(true), []*Target{ta, tb}, 5*time.Second, obs)
	if !res.Stream || res.Attempts != 3 || res.Target != tb {
		t.Fatalf("walk %+v", res)
	}
	if got := streamBody(t, rc); !strings.Contains(got, "B_1") || strings.Contains(got, "STRAY") || strings.Contains(got, "NO") {
		t.Fatalf("stream %q", got)
	}
	waitEnd(t, obs)
	time.Sleep(50 * time.Millisecond)
	for _, tc := range []struct {
		tg   *Target
		u    *rawUpstream
		name string
	}{{ta, a, "A"}, {tb, b, "B"}} {
		rc, res := h.walk(chatCall(false), []*Target{tc.tg}, 5*time.Second, nil)
		want := fmt.Sprintf("%s_%d", tc.name, tc.u.reqs.Load())
		if res.Status != 200 || !strings.Contains(string(rc.Response.Body()), want) {
			t.Fatalf("next walk on %s: %d %s, want %s", tc.name, res.Status, rc.Response.Body(), want)
		}
	}
}

// TestConnAttackReloadDuringStream: a stream running while a reload drops
// its target's identity (Pool.Retain) still ends well, and its connection,
// given back to the dropped client, does not stay open for good.
func TestConnAttackReloadDuringStream(t *testing.T) {
	release := make(chan struct{})
	u := startRawUpstream(t, func(n int, _ string, c net.Conn) {
		io.WriteString(c, sseHead+chunk(rawEvent("A"))) //nolint:errcheck
		<-release
		io.WriteString(c, chunk("data: [DONE]\n\n")+"0\r\n\r\n") //nolint:errcheck
	})
	ct := config.Target{VirtualKey: "a", Provider: config.ProviderOpenAI, BaseURL: "http://" + u.ln.Addr().String() + "/v1",
		APIKey: "sk-aaaaaaaa", Timeout: 3 * time.Second, Retry: config.Retry{Attempts: 1},
		Concurrency: config.Concurrency{MaxConcurrency: 4, QueueSize: 4}}
	p := NewPool()
	tg, err := p.Target(&ct)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, clk: realClock}
	obs := newRec()
	rc, res := h.walk(chatCall(true), []*Target{tg}, 5*time.Second, obs)
	if !res.Stream {
		t.Fatalf("walk %+v", res)
	}
	p.Retain(nil) // the reload: no target of this identity is left
	close(release)
	if got := streamBody(t, rc); !strings.Contains(got, "[DONE]") {
		t.Fatalf("stream %q", got)
	}
	if end := waitEnd(t, obs); end.Class != ClassOK {
		t.Fatalf("end %v", end.Class)
	}
	for i := 0; i < 100 && u.open.Load() > 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if n := u.open.Load(); n != 0 {
		t.Fatalf("%d upstream connections still open 10 s after the stream of a dropped identity ended", n)
	}
}

// TestConnAttackFirstEventPanic: a decoder panic on a stream's first event
// (before the commit: it reaches the walk's caller) closes the held
// connection, which has the rest of the stream and a stray behind it; the
// next walk gets its own answer and nothing is held.
func TestConnAttackFirstEventPanic(t *testing.T) {
	u := startRawUpstream(t, func(n int, _ string, c net.Conn) {
		if n == 1 {
			io.WriteString(c, sseHead+chunk(rawEvent("A"))+chunk("data: [DONE]\n\n")+"0\r\n\r\n"+rawAnswer("STRAY")) //nolint:errcheck
			return
		}
		io.WriteString(c, rawAnswer(fmt.Sprintf("ANSWER_%d", n))) //nolint:errcheck
	})
	tg := u.target(t, 1)
	tg.Adapter = panicAdapter{streamPanicAt: 1}
	h := &harness{t: t, clk: realClock}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		h.walk(chatCall(true), []*Target{tg}, 5*time.Second, nil)
	}()
	waitUntil(t, "the panicked stream's connection closed", func() bool { return u.open.Load() == 0 })
	tg.Adapter = openAIAdapter{}
	rc, res := h.walk(chatCall(false), []*Target{tg}, 5*time.Second, nil)
	if res.Status != 200 || !strings.Contains(string(rc.Response.Body()), "ANSWER_2") || tg.Limiter().InFlight() != 0 {
		t.Fatalf("next walk %d %s", res.Status, rc.Response.Body())
	}
}

// TestConnAttackSwitchingProtocolsNotPooled: after a 101 the connection
// speaks whatever the upstream switched to, not HTTP/1.1: here the
// upstream answers request A with a 101 and A's real answer a moment
// later. Lent to the next request, that connection would hand it A's
// answer (the peek before reuse finds nothing yet); it must be closed.
func TestConnAttackSwitchingProtocolsNotPooled(t *testing.T) {
	for _, stream := range []bool{false, true} {
		u := startRawUpstream(t, func(n int, _ string, c net.Conn) {
			if n == 1 {
				io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: tunnel\r\n\r\n") //nolint:errcheck
				time.Sleep(300 * time.Millisecond)
				io.WriteString(c, rawAnswer("TENANT_A")) //nolint:errcheck
				return
			}
			io.WriteString(c, rawAnswer(fmt.Sprintf("ANSWER_%d", n))) //nolint:errcheck
		})
		tg := u.target(t, 1)
		h := &harness{t: t, clk: realClock}
		if _, res := h.walk(chatCall(stream), []*Target{tg}, 5*time.Second, nil); res.Status == 200 {
			t.Fatalf("stream %v: a 101 answered 200", stream)
		}
		time.Sleep(50 * time.Millisecond)
		rc, res := h.walk(chatCall(false), []*Target{tg}, 5*time.Second, nil)
		if body := string(rc.Response.Body()); res.Status != 200 || !strings.Contains(body, "ANSWER_2") {
			t.Fatalf("stream %v: the next walk got %d %s, want ANSWER_2", stream, res.Status, body)
		}
	}
}

// A departed client's guard aborts each connection bound to it, which the
// transport then takes for a stale one: it must stop there, not close the
// target's idle connections one by one and dial a fresh one to abort too
// (review: the pool emptied by one departure).
func TestGoneGuardDoesNotDrainPool(t *testing.T) {
	h := newHarness(t)
	h.mock("a", ok("a"))
	var dials atomic.Int32
	inner := h.pool.Dial
	h.pool.Dial = func(addr string) (net.Conn, error) { dials.Add(1); return inner(addr) }
	ta := h.target("a", nil)
	if rc, _ := h.walk(chatCall(false), []*Target{ta}, 5*time.Second, nil); rc.Response.StatusCode() != 200 {
		t.Fatalf("warm-up: status %d", rc.Response.StatusCode())
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("warm-up dialed %d connections, want 1", n)
	}

	g := acquireGuard(nil)
	defer g.release()
	g.cancelNow() // gone before the transport binds anything
	g.deadline = time.Now().Add(5 * time.Second)
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	if err := (openAIAdapter{}).BuildRequest(req, &ta.Endpoint, chatCall(false), []byte("m")); err != nil {
		t.Fatal(err)
	}
	req.SetUserValue(guardKey, g)
	if _, err := (connTransport{}).RoundTrip(ta.client(), req, resp); err == nil {
		t.Fatal("a departed client's call went through")
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d connections dialed in all, want 1: the departed call dialed a fresh one after aborting the idle one", n)
	}
}

// The walk calls HostClient.Do and the transport alone applies the call's
// deadline (g.deadline): a call whose deadline is not after its start fails
// with fasthttp.ErrTimeout, as it did under DoDeadline, and sends nothing.
func TestGuardedCallPastDeadlineSendsNothing(t *testing.T) {
	h := newHarness(t)
	m := h.mock("a", ok("a"))
	ta := h.target("a", nil)
	g := acquireGuard(nil)
	defer g.release()
	g.begun = time.Now()
	g.deadline = g.begun
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	if err := (openAIAdapter{}).BuildRequest(req, &ta.Endpoint, chatCall(false), []byte("m")); err != nil {
		t.Fatal(err)
	}
	req.SetUserValue(guardKey, g)
	if err := ta.client().Do(req, resp); err != fasthttp.ErrTimeout {
		t.Fatalf("err = %v, want fasthttp.ErrTimeout", err)
	}
	if n := m.calls.Load(); n != 0 {
		t.Fatalf("the upstream got %d requests, want 0", n)
	}
}
