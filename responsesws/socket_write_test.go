package responsesws

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

// socketServer serves sockets on 127.0.0.1 with a Server whose bridged
// POST /v1/responses is answered by stream. It returns the socket URL.
func socketServer(t *testing.T, stream func(w *bufio.Writer)) (*Server, string) {
	t.Helper()
	hs := &fasthttp.Server{}
	ws := New(hs, func() Limits {
		return Limits{WebSocket: config.WebSocket{MaxMessageBytes: 1 << 20, IdleTimeout: time.Minute}, MaxRequestBytes: 10 << 20}
	}, zerolog.Nop())
	hs.Handler = func(rc *fasthttp.RequestCtx) {
		if rc.IsGet() {
			ws.Upgrade(rc, "k")
			return
		}
		rc.SetContentType("text/event-stream")
		rc.SetBodyStreamWriter(stream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln) //nolint:errcheck // ends with the listener
	t.Cleanup(func() { ln.Close(); ws.abortAll() })
	return ws, "ws://" + ln.Addr().String() + "/v1/responses"
}

// abortAll closes every open socket at once (the tests' cleanup).
func (s *Server) abortAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sk := range s.sockets {
		sk.abort()
	}
}

// A client that stops reading long enough for a write to time out has lost
// part of a message: the socket cannot carry another, so it is closed. Left
// open, the client would wait for ever on a frame that never ends, and
// each message it sent on would still be routed and billed, its answer
// dropped.
func TestSocketClosesWhenAWriteTimesOut(t *testing.T) {
	delta := `{"type":"response.output_text.delta","delta":"` + strings.Repeat("x", 256<<10) + `"}`
	cut := make(chan struct{})
	ws, url := socketServer(t, func(w *bufio.Writer) {
		w.WriteString(`data: {"type":"response.created","response":{"id":"resp_1"}}` + "\n\n") //nolint:errcheck
		// Far more than the kernel buffers of both ends hold.
		for range 256 {
			w.WriteString("data: " + delta + "\n\n") //nolint:errcheck
			if w.Flush() != nil {
				close(cut) // the socket gave up on its client
				return
			}
		}
		t.Error("the whole stream was written to a client that does not read")
	})
	ws.writeTimeout = 50 * time.Millisecond
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"response.create","model":"m","input":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cut:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream was never cut")
	}
	// The client reads again: what was sent arrives, then the socket ends.
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the socket stayed open after a write timed out: %v", err)
		}
		return
	}
}
