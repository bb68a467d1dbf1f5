package upstream

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/provider/translate"
	"github.com/switchyard/switchyard/router"
)

// onlyTargets is a residency guard admitting the listed target indexes.
type onlyTargets map[int]bool

func (g onlyTargets) Admits(t int) bool { return g[t] }

const countBody = `{"model":"claude-x","messages":[{"role":"user","content":"count me"}]}`

func countCall() *Call {
	return &Call{Surface: router.SurfaceMessages, CountTokens: true, Body: []byte(countBody), Model: []byte("claude-x")}
}

// TestWalkEstimateAnswersWithoutACall: count_tokens on a member that
// cannot count is answered by the walk itself: no upstream call, no
// attempt, usage a known zero, the X-Gateway-* headers naming the member;
// its circuit and park do not matter, since nothing is sent.
func TestWalkEstimateAnswersWithoutACall(t *testing.T) {
	h := newHarness(t)
	m := h.mock("oai", ok("oai"))
	tg := h.target("oai", nil)
	for tg.Breaker().State(h.clk.now()) == BreakerClosed {
		tk, _ := tg.Breaker().Allow(h.clk.now())
		tg.Breaker().Done(tk, ClassServer, h.clk.now())
	}
	tg.Park().ParkUntil(h.clk.now().Add(time.Minute))
	obs := newRec()
	rc, res := h.walk(countCall(), []*Target{tg}, 5*time.Second, obs)
	want := `{"input_tokens":18}` // ceil(72 / 4)
	if rc.Response.StatusCode() != 200 || string(rc.Response.Body()) != want || res.Class != ClassOK || res.Attempts != 0 ||
		!res.Usage.Known() || res.Usage.Prompt != 0 || res.Usage.Completion != 0 {
		t.Fatalf("%d %s %+v", rc.Response.StatusCode(), rc.Response.Body(), res)
	}
	for k, v := range map[string]string{"X-Gateway-Estimate": "true", HeaderTarget: "oai", HeaderProvider: "openai",
		HeaderModel: "claude-x", HeaderAttempts: "0", "Content-Type": "application/json"} {
		if got := string(rc.Response.Header.Peek(k)); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if m.calls.Load() != 0 || len(obs.attempts)+len(obs.skips) != 0 {
		t.Errorf("calls %d attempts %v skips %v", m.calls.Load(), obs.attempts, obs.skips)
	}
}

// TestWalkEstimateFencedFirst: the residency guard comes before the
// estimate: a member the key may not reach does not answer either.
func TestWalkEstimateFencedFirst(t *testing.T) {
	h := newHarness(t)
	h.mock("oai", ok("oai"))
	tg := h.target("oai", nil)
	call := countCall()
	call.Fence = onlyTargets{}
	rc, res := h.walk(call, []*Target{tg}, 5*time.Second, nil)
	if !res.Fenced || rc.Response.StatusCode() != 500 || len(rc.Response.Header.Peek("X-Gateway-Estimate")) != 0 {
		t.Fatalf("%d %s %+v", rc.Response.StatusCode(), rc.Response.Body(), res)
	}
	call.Fence = onlyTargets{tg.Index: true}
	if rc, res = h.walk(call, []*Target{tg}, 5*time.Second, nil); res.Fenced || rc.Response.StatusCode() != 200 {
		t.Fatalf("admitted: %d %+v", rc.Response.StatusCode(), res)
	}
}

// TestWalkEstimateAfterNativeFailover: the walk reaches the estimate in
// chain order: a native member (anthropic) that fails over is called
// first.
func TestWalkEstimateAfterNativeFailover(t *testing.T) {
	h := newHarness(t)
	ant := h.mock("ant", status(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	oai := h.mock("oai", ok("oai"))
	ta := h.target("ant", func(ct *config.Target) { ct.Provider, ct.BaseURL = config.ProviderAnthropic, "http://ant" })
	to := h.target("oai", nil)
	rc, res := h.walk(countCall(), []*Target{ta, to}, 5*time.Second, nil)
	if rc.Response.StatusCode() != 200 || res.Attempts != 1 || res.Target != to || ant.calls.Load() != 1 || oai.calls.Load() != 0 ||
		string(rc.Response.Header.Peek(HeaderAttempts)) != "1" {
		t.Fatalf("%d %s attempts %d calls %d %d", rc.Response.StatusCode(), rc.Response.Body(), res.Attempts, ant.calls.Load(), oai.calls.Load())
	}
	if got := string(ant.last().URI().Path()); got != "/v1/messages/count_tokens" {
		t.Errorf("native count at %s", got)
	}
}

// refusingAdapter is an OpenAI adapter whose translation refuses every
// body, as a translator does (translate.Error).
type refusingAdapter struct{ openAIAdapter }

func (refusingAdapter) BuildRequest(*fasthttp.Request, *Endpoint, *Call, []byte) error {
	return &translate.Error{Status: 400, Code: "previous_response_not_supported", Message: "previous_response_id names no response here"}
}

// TestWalkTranslationRefusal: a translate.Error is a 400 in the client's
// envelope with its own code, no upstream call, neutral for the breaker.
func TestWalkTranslationRefusal(t *testing.T) {
	h := newHarness(t)
	m := h.mock("oai", ok("oai"))
	tg := h.target("oai", nil)
	tg.Adapter = refusingAdapter{}
	for _, tc := range []struct {
		surface router.Surface
		want    string
	}{
		{router.SurfaceResponses, `{"error":{"message":"previous_response_id names no response here","type":"invalid_request_error","param":null,"code":"previous_response_not_supported"}}`},
		{router.SurfaceMessages, `{"type":"error","error":{"type":"invalid_request_error","message":"previous_response_id names no response here"}}`},
	} {
		call := &Call{Surface: tc.surface, Body: []byte(chatBody), Model: []byte("gpt-x")}
		rc, res := h.walk(call, []*Target{tg}, 5*time.Second, nil)
		if rc.Response.StatusCode() != 400 || string(rc.Response.Body()) != tc.want || res.Attempts != 0 {
			t.Errorf("%v: %d %s attempts %d", tc.surface, rc.Response.StatusCode(), rc.Response.Body(), res.Attempts)
		}
	}
	if m.calls.Load() != 0 || tg.Breaker().State(h.clk.now()) != BreakerClosed {
		t.Errorf("calls %d breaker %v", m.calls.Load(), tg.Breaker().State(h.clk.now()))
	}
}

// TestWalkReleasesTranslation: a translated walk gives back what its
// attempts held when it ends, streamed or not, so the next request on the
// same Call starts clean.
func TestWalkReleasesTranslation(t *testing.T) {
	h := newHarness(t)
	h.mock("oai", func(ctx *fasthttp.RequestCtx, _ int) {
		ctx.SetContentType("application/json")
		ctx.SetBodyString(toolTurn.chatCompletion())
	})
	tg := h.target("oai", nil)
	call := &Call{Surface: router.SurfaceMessages, Body: []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],` +
		`"tools":[{"type":"web_search_20250305","name":"web_search"}]}`), Model: []byte("m")}
	rc, _ := h.walk(call, []*Target{tg}, 5*time.Second, nil)
	if rc.Response.StatusCode() != 200 || !strings.Contains(string(rc.Response.Body()), `"type":"tool_use"`) ||
		string(rc.Response.Header.Peek("X-Gateway-Dropped-Tools")) != "web_search_20250305" {
		t.Fatalf("%d %s", rc.Response.StatusCode(), rc.Response.Body())
	}
	if call.HoldsTranslation() {
		t.Errorf("the walk kept its translation")
	}
}
