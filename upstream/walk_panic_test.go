package upstream

import (
	"bufio"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

// panicAdapter is the OpenAI adapter with a bug injected: BuildRequest
// panics when build is set; the stream decoder panics on its call number
// streamPanicAt (1-based; 0 = never).
type panicAdapter struct {
	openAIAdapter
	build         bool
	streamPanicAt int32
}

func (a panicAdapter) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, m []byte) error {
	if a.build {
		panic("injected BuildRequest bug")
	}
	return a.openAIAdapter.BuildRequest(req, ep, c, m)
}

func (a panicAdapter) NewStream(c *Call) StreamDecoder {
	return &panicDecoder{at: a.streamPanicAt}
}

type panicDecoder struct {
	sseDecoder
	at, n int32
}

func (d *panicDecoder) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	if d.n++; d.n == d.at {
		panic("injected decoder bug")
	}
	return d.sseDecoder.Next(dst, r)
}

// panicRec is a recObserver that also hears of stream writer panics.
type panicRec struct {
	*recObserver
	panics atomic.Int32
	stack  atomic.Value
}

func (p *panicRec) Panicked(v any, stack []byte) {
	p.panics.Add(1)
	p.stack.Store(string(stack))
}

// halfOpen opens t's breaker and moves the harness clock past its timeout,
// so the next Allow admits the single half-open probe.
func halfOpen(t *testing.T, h *harness, tg *Target) {
	t.Helper()
	br := tg.Breaker()
	now := h.clk.now()
	for br.State(now) == BreakerClosed {
		tk, _ := br.Allow(now)
		br.Done(tk, ClassServer, now)
	}
	h.offset.Add(int64(time.Minute))
	if br.State(h.clk.now()) != BreakerHalfOpen {
		t.Fatalf("breaker %v, want half_open", br.State(h.clk.now()))
	}
}

// A panic inside a walk (an adapter bug) must not leak the member's limiter
// slot or its breaker ticket: a leaked half-open probe slot would keep the
// target out of rotation for good.
func TestWalkPanicReleasesSlotAndHalfOpenProbe(t *testing.T) {
	h := newHarness(t)
	h.mock("a", ok("a"))
	ta := h.target("a", func(ct *config.Target) { ct.CircuitBreaker.FailureThreshold = 1 })
	ta.Adapter = panicAdapter{build: true}
	halfOpen(t, h, ta)

	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the injected panic did not reach the caller")
			}
		}()
		h.walk(chatCall(false), []*Target{ta}, 5*time.Second, nil)
	}()
	if n := ta.Limiter().InFlight(); n != 0 {
		t.Fatalf("%d limiter slots leaked by the panic", n)
	}
	if _, ok := ta.Breaker().Allow(h.clk.now()); !ok {
		t.Fatal("the half-open probe slot leaked by the panic: the breaker admits no probe")
	}
}

// A decoder panic after the commit runs on fasthttp's stream goroutine,
// where nothing recovers it: the writer must end the stream with an
// internal_error frame (no [DONE]), release everything and report it.
func TestStreamDecoderPanicEndsStreamAndReleases(t *testing.T) {
	h := newHarness(t)
	h.mock("a", sse(0, ev1, ev2, done))
	ta := h.target("a", func(ct *config.Target) { ct.CircuitBreaker.FailureThreshold = 1 })
	ta.Adapter = panicAdapter{streamPanicAt: 2}
	obs := &panicRec{recObserver: newRec()}
	rc, res := h.walk(chatCall(true), []*Target{ta}, 5*time.Second, obs)
	if !res.Stream {
		t.Fatalf("not committed: %+v", res)
	}
	body := streamBody(t, rc)
	if !strings.HasPrefix(body, ev1+"data: {\"error\":") || !strings.Contains(body, `"code":"internal_error"`) ||
		strings.Contains(body, "[DONE]") {
		t.Fatalf("stream body %q", body)
	}
	end := waitEnd(t, obs.recObserver)
	if end.Class == ClassOK {
		t.Fatalf("stream end %+v reported OK", end)
	}
	if obs.panics.Load() != 1 || !strings.Contains(obs.stack.Load().(string), "panicDecoder") {
		t.Fatalf("panic reports %d, stack %v", obs.panics.Load(), obs.stack.Load())
	}
	if ta.Limiter().InFlight() != 0 {
		t.Fatal("the panicked stream did not release its slot")
	}
	if st := ta.Breaker().State(h.clk.now()); st != BreakerClosed {
		t.Fatalf("a gateway bug opened the target's breaker: %v", st)
	}
}
