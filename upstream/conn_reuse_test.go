//go:build linux

package upstream

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestReuseMomentsAfterReleaseIsStillPeeked decides whether the peek before
// reuse may be skipped on a connection released moments ago whose reader
// holds nothing: it may not. The upstream answers, waits until the walk has
// returned (the connection is back in the pool, its reader empty), then
// writes a stray answer; the next walk starts at once, typically tens of
// microseconds after the release. The stray is in the socket by then and
// only the peek can see it: a reuse that skipped the peek because the
// connection was released "just now" reads it as its own answer, one
// client's answer handed to another. Under load that is when reuse happens
// (a connection is taken again within microseconds), so a skip by age would
// switch the check off exactly when it matters.
func TestReuseMomentsAfterReleaseIsStillPeeked(t *testing.T) {
	const rounds = 20
	released, wrote := make(chan struct{}), make(chan struct{})
	u := startRawUpstream(t, func(n int, body string, c net.Conn) {
		io.WriteString(c, rawAnswer(fmt.Sprintf("ANSWER_%d", n))) //nolint:errcheck
		if strings.Contains(body, "first") {
			<-released
			io.WriteString(c, rawAnswer(fmt.Sprintf("STRAY_AFTER_%d", n))) //nolint:errcheck
			wrote <- struct{}{}
		}
	})
	tg := u.target(t, 1)
	h := &harness{t: t, clk: realClock}
	for i := range rounds {
		first := chatCall(false)
		first.Body = []byte(`{"model":"m","messages":[{"role":"user","content":"first"}]}`)
		rc, res := h.walk(first, []*Target{tg}, 5*time.Second, nil)
		releasedAt := time.Now()
		if res.Status != 200 || strings.Contains(string(rc.Response.Body()), "STRAY") {
			t.Fatalf("round %d, first walk: %d %s", i, res.Status, rc.Response.Body())
		}
		released <- struct{}{}
		<-wrote
		gap := time.Since(releasedAt)
		rc, res = h.walk(chatCall(false), []*Target{tg}, 5*time.Second, nil)
		body := string(rc.Response.Body())
		if res.Status != 200 || strings.Contains(body, "STRAY") {
			t.Fatalf("round %d: the connection released moments ago carried a stray answer to the next request: %d %s", i, res.Status, body)
		}
		if i == 0 {
			t.Logf("the second walk began %v after the first returned", gap)
		}
	}
	if d := tg.ConnDiscards(int(discardUnsolicited)); d != rounds {
		t.Fatalf("%d connections discarded as unsolicited, want %d", d, rounds)
	}
}
