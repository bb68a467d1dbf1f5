package upstream

import (
	"bufio"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

// bareErrAdapter streams a first event that is a client error with neither
// status nor envelope: an adapter bug the walk must not turn into a 200.
type bareErrAdapter struct{ openAIAdapter }

func (bareErrAdapter) NewStream(*Call) StreamDecoder { return bareErrDecoder{} }

type bareErrDecoder struct{}

func (bareErrDecoder) Next(dst []byte, _ *bufio.Reader) ([]byte, error) {
	return dst, &StreamError{Class: ClassClient}
}

func TestWalkClientErrorWithoutStatusOrEnvelopeIs400(t *testing.T) {
	h := newHarness(t)
	h.mock("a", sse(0, ev1, done))
	ta := h.target("a", nil)
	ta.Adapter = bareErrAdapter{}
	rc, res := h.walk(chatCall(true), []*Target{ta}, 5*time.Second, nil)
	if rc.Response.StatusCode() != fasthttp.StatusBadRequest || res.Status != 400 ||
		!strings.Contains(string(rc.Response.Body()), `"code":"invalid_request"`) {
		t.Fatalf("status %d body %q", rc.Response.StatusCode(), rc.Response.Body())
	}
}

// When a member was called and failed and only the later ones were skipped
// as open, the 503 must not claim that every circuit is open.
func TestWalkOpenAfterAFailureSaysSo(t *testing.T) {
	h := newHarness(t)
	h.mock("a", status(500, "x"))
	tb := h.target("b", func(ct *config.Target) { ct.CircuitBreaker.FailureThreshold = 1 })
	now := h.clk.now()
	tk, _ := tb.Breaker().Allow(now)
	tb.Breaker().Done(tk, ClassServer, now)
	rc, res := h.walk(chatCall(false), []*Target{h.target("a", nil), tb}, 5*time.Second, nil)
	body := string(rc.Response.Body())
	if rc.Response.StatusCode() != 503 || res.Attempts != 1 || strings.Contains(body, "every candidate") ||
		!strings.Contains(body, CodeUpstreamUnavailable) {
		t.Fatalf("status %d attempts %d body %s", rc.Response.StatusCode(), res.Attempts, body)
	}
	// All skipped: the message says every circuit is open.
	rc, _ = h.walk(chatCall(false), []*Target{tb}, 5*time.Second, nil)
	if !strings.Contains(string(rc.Response.Body()), "every candidate's circuit is open") {
		t.Fatalf("all open: %s", rc.Response.Body())
	}
}

// bareMidErrAdapter relays the first SSE event, then fails with a
// StreamError that carries no envelope.
type bareMidErrAdapter struct{ openAIAdapter }

func (bareMidErrAdapter) NewStream(*Call) StreamDecoder { return &bareMidErrDecoder{} }

type bareMidErrDecoder struct {
	sseDecoder
	n int
}

func (d *bareMidErrDecoder) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	if d.n++; d.n > 1 {
		return dst, &StreamError{Class: ClassServer, Status: 500}
	}
	return d.sseDecoder.Next(dst, r)
}

func TestStreamErrorWithoutEnvelopeStillWritesAnErrorFrame(t *testing.T) {
	h := newHarness(t)
	h.mock("a", sse(0, ev1, ev2, done))
	ta := h.target("a", nil)
	ta.Adapter = bareMidErrAdapter{}
	obs := newRec()
	rc, _ := h.walk(chatCall(true), []*Target{ta}, 5*time.Second, obs)
	body := streamBody(t, rc)
	want := ev1 + "data: " + string(AppendError(nil, "upstream stream failed", TypeUpstream, CodeUpstreamError)) + "\n\n"
	if body != want {
		t.Fatalf("stream body\n got %q\nwant %q", body, want)
	}
	waitEnd(t, obs)
}

// A model id with control bytes (JSON escapes allow any) must not put them
// into X-Gateway-Model, where strict clients refuse the whole response.
func TestWalkModelHeaderHasNoControlBytes(t *testing.T) {
	h := newHarness(t)
	h.mock("a", status(404, `{"error":{"message":"no such model","type":"invalid_request_error","code":"model_not_found"}}`))
	call := &Call{Surface: chatCall(false).Surface, Body: []byte(`{"model":"m\u0001x\u007f\u0000"}`), Model: []byte("m\x01x\x7f\x00")}
	rc, _ := h.walk(call, []*Target{h.target("a", nil)}, 5*time.Second, nil)
	if got := hdr(rc, HeaderModel); got != "m?x??" {
		t.Fatalf("X-Gateway-Model %q", got)
	}
	rc, _ = h.walk(chatCall(false), []*Target{h.target("a", nil)}, 5*time.Second, nil)
	if got := hdr(rc, HeaderModel); got != "gpt-x" {
		t.Fatalf("X-Gateway-Model %q", got)
	}
}

// A walk that parks a member after its 429 and then finds the last member
// parked answers with the sooner of the two, not the later.
func TestWalkAllParkedRetryAfterIsTheSoonest(t *testing.T) {
	h := newHarness(t)
	h.mock("a", status(429, "x", "Retry-After", "3"))
	ta, tb := h.target("a", nil), h.target("b", nil)
	tb.Park().ParkUntil(h.clk.now().Add(40 * time.Second))
	rc, res := h.walk(chatCall(false), []*Target{ta, tb}, 5*time.Second, nil)
	if rc.Response.StatusCode() != 429 || res.Class != ClassParked || hdr(rc, "Retry-After") != "3" {
		t.Fatalf("status %d class %v Retry-After %q", rc.Response.StatusCode(), res.Class, hdr(rc, "Retry-After"))
	}
}
