//go:build linux

package upstream

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/config"
)

// Over TLS the reuse check runs on the socket under the TLS layer: a
// handshake (whose writes follow reads) is never mistaken for a reused
// connection, and an https upstream that closes idle connections (here
// 100 ms after each answer) still answers every request, buffered and
// streamed alike, with each close counted.
func TestTLSIdleClosedConnectionIsReplaced(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The walks alternate buffered and streamed calls.
		if calls.Add(1)%2 == 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"a","object":"chat.completion","choices":[]}`))
	}))
	srv.Config.IdleTimeout = 100 * time.Millisecond
	srv.StartTLS()
	t.Cleanup(srv.Close)

	p := NewPool()
	ct := config.Target{
		VirtualKey: "a", Provider: config.ProviderOpenAI, BaseURL: srv.URL + "/v1", APIKey: "sk-a",
		Timeout:     5 * time.Second,
		Retry:       config.Retry{Attempts: 1},
		Concurrency: config.Concurrency{MaxConcurrency: 4, QueueSize: 4},
	}
	tg, err := p.Target(&ct)
	if err != nil {
		t.Fatal(err)
	}
	tg.client().TLSConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test server's own certificate
	var dials atomic.Int32
	tg.client().Dial = func(addr string) (net.Conn, error) {
		dials.Add(1)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		tc := newTrackedConn(c, &tg.state.conns)
		tc.tls = true
		return tc, nil
	}
	h := &harness{t: t, clk: realClock}
	for i := 0; i < 4; i++ {
		// Two back to back reuse one connection; then a pause lets the
		// server close it.
		for _, stream := range []bool{false, true} {
			rc, res := h.walk(chatCall(stream), []*Target{tg}, 5*time.Second, nil)
			if res.Status != 200 {
				t.Fatalf("round %d stream %v: status %d class %v discards %d %d %d", i, stream, res.Status, res.Class, tg.ConnDiscards(1), tg.ConnDiscards(2), tg.ConnDiscards(3))
			}
			if stream {
				streamBody(t, rc)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	if calls.Load() != 8 {
		t.Fatalf("%d upstream calls, want 8", calls.Load())
	}
	if got := tg.ConnDiscards(int(discardClosed)); got != 3 || dials.Load() != 4 {
		t.Fatalf("closed discards %d (unsolicited %d, expired %d), dials %d; want 3 and 4", got,
			tg.ConnDiscards(int(discardUnsolicited)), tg.ConnDiscards(int(discardExpired)), dials.Load())
	}
}
