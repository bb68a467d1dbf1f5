package upstream

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// An answer whose head outgrows HostClient's 4 KiB reader (6 KiB of
// rate-limit and tracing headers, say) is read whole through a larger
// reader, up to maxResponseHead, buffered or streamed; the connection then
// serves the next answer, read through the 4 KiB reader alone. A head over
// maxResponseHead fails the attempt.
func TestLargeAnswerHead(t *testing.T) {
	for _, stream := range []bool{false, true} {
		h := newHarness(t)
		dial := h.pool.Dial
		var dials atomic.Int32
		h.pool.Dial = func(addr string) (net.Conn, error) {
			dials.Add(1)
			return dial(addr)
		}
		blob := map[int]string{1: strings.Repeat("r", 6<<10), 3: strings.Repeat("r", 9<<10)}
		h.mock("a", func(ctx *fasthttp.RequestCtx, n int) {
			if v, ok := blob[n]; ok {
				ctx.Response.Header.Set("X-Ratelimit-Blob", v)
			}
			if stream {
				sse(0, ev1, done)(ctx, n)
			} else {
				ok("a")(ctx, n)
			}
		})
		ta := h.target("a", nil)
		for n := 1; n <= 3; n++ {
			obs := newRec()
			rc, res := h.walk(chatCall(stream), []*Target{ta}, 5*time.Second, obs)
			if n == 3 {
				if res.Status == 200 {
					t.Fatalf("stream %v: a 9 KiB head was accepted", stream)
				}
				continue
			}
			if res.Status != 200 {
				t.Fatalf("stream %v, answer %d: status %d", stream, n, res.Status)
			}
			if !stream {
				if body := string(rc.Response.Body()); !strings.Contains(body, `"id":"a"`) {
					t.Fatalf("answer %d: body %q", n, body)
				}
				continue
			}
			relay := rc.Response.BodyStream().(*relayBody)
			if rd := relay.guard.stream.rd; n == 2 && (rd.under != nil || rd.br.Size() != answerBufferSize) {
				t.Fatalf("a small head: the stream holds a %d-byte reader (stacked: %v), want %d", rd.br.Size(), rd.under != nil, answerBufferSize)
			}
			if got := streamBody(t, rc); got != ev1+done {
				t.Fatalf("answer %d: stream body %q", n, got)
			}
			waitEnd(t, obs)
		}
		if d := dials.Load(); d != 1 {
			t.Fatalf("stream %v: %d dials, want 1 (the 6 KiB head's connection reused)", stream, d)
		}
	}
}
