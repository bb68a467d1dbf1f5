package upstream

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

const (
	goodParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	goodState  = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
)

func TestValidTraceparent(t *testing.T) {
	for _, s := range []string{
		goodParent,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-will-be-like",
	} {
		if !validTraceparent([]byte(s)) {
			t.Errorf("refused valid %q", s)
		}
	}
	for _, s := range []string{
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",         // no flags
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",     // version 00 is exactly 55
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",     // trailing byte
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",      // uppercase
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",      // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",      // zero parent id
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",      // forbidden version
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",      // separator
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",      // not hex
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",     // later version: '-' must follow
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-a\tb", // control byte
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" + strings.Repeat("a", 300),
	} {
		if validTraceparent([]byte(s)) {
			t.Errorf("accepted malformed %q", s)
		}
	}
}

// traceWalk walks once to a target of provider with the client headers hdr
// (name, value pairs; a name may repeat) and returns what the mock got.
func traceWalk(t *testing.T, provider string, hdr ...string) *fasthttp.Request {
	t.Helper()
	return traceWalkCall(t, provider, chatCall(false), hdr...)
}

func traceWalkCall(t *testing.T, provider string, call *Call, hdr ...string) *fasthttp.Request {
	t.Helper()
	h := newHarness(t)
	a := h.mock("a", status(500, `{"error":{"message":"x"}}`))
	tg := h.target("a", func(ct *config.Target) {
		ct.Provider = provider
		ct.Models = nil
		switch provider {
		case config.ProviderAnthropic:
			ct.BaseURL = "http://a"
		case config.ProviderBedrock:
			ct.BaseURL, ct.APIKey, ct.Region = "http://a", "", "us-east-1"
			ct.AWSAccessKeyID, ct.AWSSecretAccessKey = "AKIDEXAMPLE", "secret"
		}
	})
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/chat/completions")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	req.SetBody(call.Body)
	rc := &fasthttp.RequestCtx{}
	rc.Init(&req, nil, nil)
	walkWith(rc, withTrace(call, &req.Header), []*Target{tg}, h.clk.now().Add(5*time.Second), nil, h.clk)
	r := a.last()
	if r == nil {
		t.Fatal("no upstream call")
	}
	return r
}

func TestWalkForwardsTraceContext(t *testing.T) {
	for _, p := range []string{config.ProviderOpenAI, config.ProviderAnthropic, config.ProviderBedrock} {
		t.Run(p, func(t *testing.T) {
			r := traceWalk(t, p, "traceparent", goodParent, "tracestate", goodState)
			if got := string(r.Header.Peek("Traceparent")); got != goodParent {
				t.Errorf("traceparent %q, want %q", got, goodParent)
			}
			if got := string(r.Header.Peek("Tracestate")); got != goodState {
				t.Errorf("tracestate %q, want %q", got, goodState)
			}
			if p == config.ProviderBedrock {
				// Added after signing and outside SignedHeaders: the
				// signature covers what it says it covers.
				auth := string(r.Header.Peek("Authorization"))
				if !strings.Contains(auth, "SignedHeaders=") || strings.Contains(auth, "trace") {
					t.Errorf("Authorization %q", auth)
				}
			}
		})
	}
}

func TestWalkDropsBadTraceContext(t *testing.T) {
	for name, hdr := range map[string][]string{
		"malformed":          {"traceparent", "00-xyz-00f067aa0ba902b7-01", "tracestate", goodState},
		"uppercase":          {"traceparent", strings.ToUpper(goodParent), "tracestate", goodState},
		"repeated":           {"traceparent", goodParent, "traceparent", goodParent, "tracestate", goodState},
		"repeated different": {"traceparent", goodParent, "traceparent", "00-11111111111111111111111111111111-2222222222222222-01"},
		"state alone":        {"tracestate", goodState},
	} {
		t.Run(name, func(t *testing.T) {
			for _, p := range []string{config.ProviderOpenAI, config.ProviderAnthropic, config.ProviderBedrock} {
				r := traceWalk(t, p, hdr...)
				if v := r.Header.Peek("Traceparent"); v != nil {
					t.Errorf("%s: traceparent %q forwarded", p, v)
				}
				if v := r.Header.Peek("Tracestate"); v != nil {
					t.Errorf("%s: tracestate %q forwarded", p, v)
				}
				if raw := strings.ToLower(r.Header.String()); strings.Contains(raw, "trace") {
					t.Errorf("%s: a trace header in\n%s", p, raw)
				}
			}
		})
	}
	// A repeated tracestate is dropped; the valid traceparent still goes.
	r := traceWalk(t, config.ProviderOpenAI, "traceparent", goodParent, "tracestate", "a=1", "tracestate", "b=2")
	if got := string(r.Header.Peek("Traceparent")); got != goodParent {
		t.Errorf("traceparent %q", got)
	}
	if v := r.Header.Peek("Tracestate"); v != nil {
		t.Errorf("repeated tracestate forwarded as %q", v)
	}
}

func TestTraceID(t *testing.T) {
	var h fasthttp.RequestHeader
	if TraceID(&h) != nil {
		t.Fatal("trace id without a header")
	}
	h.Add("traceparent", goodParent)
	if got := string(TraceID(&h)); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("TraceID %q", got)
	}
	h.Add("traceparent", goodParent)
	if TraceID(&h) != nil {
		t.Fatal("trace id of a repeated traceparent")
	}
}

// The pass-through surfaces forward the trace context too.
func TestWalkForwardsTraceContextOnPassThroughSurfaces(t *testing.T) {
	for name, tc := range map[string]struct {
		provider string
		call     *Call
	}{
		"responses": {config.ProviderOpenAI, responsesCall(false)},
		"messages":  {config.ProviderAnthropic, messagesCall(false)},
	} {
		r := traceWalkCall(t, tc.provider, tc.call, "traceparent", goodParent, "tracestate", goodState)
		if string(r.Header.Peek("Traceparent")) != goodParent || string(r.Header.Peek("Tracestate")) != goodState {
			t.Errorf("%s: upstream headers\n%s", name, r.Header.String())
		}
	}
}
