package upstream

import (
	"bufio"
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/provider/providertest"
)

// providertest.Prelude returns an event-stream providertest.Prelude with the given lengths and a
// valid (or, with badCRC, a wrong) providertest.Prelude CRC.

// flood answers with head, then pattern repeated up to floodSize bytes in
// all, counting in written what the client accepted; then it holds the
// connection open (until the test ends) so that only the decoder's bound,
// not the end of the body, can end the attempt quickly.
func flood(t *testing.T, contentType string, head, pattern []byte, written *atomic.Int64) func(*fasthttp.RequestCtx, int) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return func(ctx *fasthttp.RequestCtx, _ int) {
		ctx.SetContentType(contentType)
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			chunk := bytes.Repeat(pattern, (64<<10)/len(pattern))
			if _, err := w.Write(head); err != nil || w.Flush() != nil {
				return
			}
			written.Add(int64(len(head)))
			for written.Load() < floodSize {
				if _, err := w.Write(chunk); err != nil || w.Flush() != nil {
					return
				}
				written.Add(int64(len(chunk)))
			}
			select {
			case <-stop:
			case <-time.After(5 * time.Second):
			}
		})
	}
}

// floodSlack is what the client side may have buffered beyond what the
// decoder read (pipe, fasthttp's read buffer, the chunk in flight).
const floodSlack = 1 << 20

// Through the walk: before the commit an oversized Anthropic event or
// Bedrock frame is an ordinary transport failure that fails over; after
// the commit it ends the stream with an error frame and no [DONE]. Either
// way the bound ends the attempt (a timeout would be another class), having
// taken no more than the bound from the upstream. The attempt timeout is
// well above what reading 8 MiB takes under -race on a loaded machine (1s
// was not) and below the 5s the flood holds its connection open, so a
// missing bound still shows as a timeout.
func TestWalkOversizedUpstreamEvent(t *testing.T) {
	const attemptTimeout = 4 * time.Second
	anth := func(ct *config.Target) {
		ct.Provider = config.ProviderAnthropic
		ct.Timeout = attemptTimeout
	}
	bed := func(ct *config.Target) {
		ct.Provider = config.ProviderBedrock
		ct.Region = "us-east-1"
		ct.Timeout = attemptTimeout
	}
	const eventstreamType = "application/vnd.amazon.eventstream"
	bedText := append(providertest.BedrockFrame(t, "messageStart", []byte(`{"role":"assistant"}`)),
		providertest.BedrockFrame(t, "contentBlockDelta", []byte(`{"contentBlockIndex":0,"delta":{"text":"Hel"}}`))...)
	cases := []struct {
		name            string
		mod             func(*config.Target)
		contentType     string
		head, pattern   []byte
		committed       bool
		maxFromUpstream int64
	}{
		{"anthropic no newline before commit", anth, "text/event-stream", []byte("data: "), []byte("a"), false, maxSSEEvent},
		{"anthropic no blank line after commit", anth, "text/event-stream", []byte(anthStart + anthDelta), []byte("data: x\n"), true, maxSSEEvent},
		{"bedrock 4 GiB frame before commit", bed, eventstreamType, providertest.Prelude(0xFFFFFFFF, 0, false), []byte{0}, false, 0},
		{"bedrock wrapped payload after commit", bed, eventstreamType, append(append([]byte(nil), bedText...), providertest.Prelude(64, 1000, false)...), []byte{0}, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			var written atomic.Int64
			h.mock("a", flood(t, c.contentType, c.head, c.pattern, &written))
			b := h.mock("b", sse(0, ev1, done))
			ta := h.target("a", c.mod)
			obs := newRec()
			rc, res := h.walk(chatCall(true), []*Target{ta, h.target("b", nil)}, 5*time.Second, obs)
			got := streamBody(t, rc)
			end := waitEnd(t, obs)
			if c.committed {
				if !strings.Contains(got, `"content":"Hel"`) || !strings.Contains(got, `data: {"error":`) ||
					strings.Contains(got, "[DONE]") || end.Class != ClassTransport || b.calls.Load() != 0 {
					t.Fatalf("end class %v, b calls %d, body %.300q", end.Class, b.calls.Load(), got)
				}
			} else {
				if got != ev1+done || strings.Join(obs.fails, ",") != "a:transport" || res.Attempts != 2 {
					t.Fatalf("failovers %v, result %+v, body %.300q", obs.fails, res, got)
				}
			}
			if limit := int64(len(c.head)) + c.maxFromUpstream + floodSlack; written.Load() > limit {
				t.Fatalf("the upstream got %d bytes out, want at most %d", written.Load(), limit)
			}
			if ta.Limiter().InFlight() != 0 || ta.Breaker().failures.Load() != 1 {
				t.Fatalf("a: in flight %d, breaker failures %d", ta.Limiter().InFlight(), ta.Breaker().failures.Load())
			}
		})
	}
}
