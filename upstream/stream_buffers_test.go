package upstream

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// readHookConn calls hook before every Read of the upstream connection.
type readHookConn struct {
	net.Conn
	hook func()
}

func (c *readHookConn) Read(p []byte) (int, error) {
	c.hook()
	return c.Conn.Read(p)
}

// A committed stream waiting for its next event holds neither the decoder's
// read buffer nor a frame buffer: it waits on the upstream connection's own
// reader and takes both only once bytes are in. Every read of the upstream
// connection between events is checked, on the relay's own goroutine.
func TestStreamHoldsNoBuffersBetweenEvents(t *testing.T) {
	h := newHarness(t)
	dial := h.pool.Dial
	var relay *relayBody
	waits, held := 0, 0
	h.pool.Dial = func(addr string) (net.Conn, error) {
		c, err := dial(addr)
		if err != nil {
			return nil, err
		}
		return &readHookConn{Conn: c, hook: func() {
			// The relay runs on this test's goroutine (WriteTo below), as
			// do the walk's reads before relay is set.
			if relay == nil || relay.ended {
				return // the walk's reads, or the drain after [DONE]
			}
			waits++
			if relay.br != nil || relay.buf != nil {
				held++
			}
		}}, nil
	}
	// Events 30 ms apart: each arrives alone, so nothing is left buffered
	// behind one while the next is awaited.
	h.mock("a", sse(30*time.Millisecond, ev1, ev2, ev1, done))
	ta := h.target("a", nil)
	obs := newRec()
	rc, res := h.walk(chatCall(true), []*Target{ta}, 5*time.Second, obs)
	if !res.Stream {
		t.Fatalf("not a stream: %+v", res)
	}
	relay = rc.Response.BodyStream().(*relayBody)
	var out bytes.Buffer
	if _, err := relay.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != ev1+ev2+ev1+done {
		t.Fatalf("stream body %q", got)
	}
	if end := waitEnd(t, obs); end.Class != ClassOK {
		t.Fatalf("stream end %+v", end)
	}
	relay.Close() //nolint:errcheck
	if waits < 3 || held != 0 {
		t.Fatalf("%d reads of the upstream between events, %d of them with a read or frame buffer held; want 3 or more, none", waits, held)
	}
}
