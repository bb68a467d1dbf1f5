//go:build linux

package upstream

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// Over TLS the reuse check runs on the socket under the TLS layer: a
// handshake (whose writes follow reads) is never mistaken for a reused
// connection, and an https upstream that closes idle connections (here
// 100 ms after each answer) still answers every request, buffered and
// streamed alike, with each close counted.
func TestTLSIdleClosedConnectionIsReplaced(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewUnstartedServer(alternatingAnswers(&calls))
	srv.Config.IdleTimeout = 100 * time.Millisecond
	srv.StartTLS()
	t.Cleanup(srv.Close)

	var dials atomic.Int32
	tg := insecureTLSTarget(t, srv.URL+"/v1", "sk-a", &dials)
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
