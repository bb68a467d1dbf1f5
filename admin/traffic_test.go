package admin

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// getHistory answers /api/history as if asked at now.
func getHistory(t *testing.T, s *Server, query string, now time.Time) (int, TrafficHistory, string) {
	t.Helper()
	var rc fasthttp.RequestCtx
	rc.Request.SetRequestURI("/api/history?" + query)
	s.history(&rc, s.opts.Gateway.Load().Config, now)
	var h TrafficHistory
	if rc.Response.StatusCode() == 200 {
		if err := json.Unmarshal(rc.Response.Body(), &h); err != nil {
			t.Fatalf("%s: %v", rc.Response.Body(), err)
		}
	}
	return rc.Response.StatusCode(), h, string(rc.Response.Body())
}

func seriesNamed(list []SeriesHistory, name string) *SeriesHistory {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// A request that failed over from a to b: a counts a failed call, b a
// good one with the answer's tokens, the key one request; a skipped member
// counts nothing, and a member's call time is its own, not the request's.
func TestHistoryRecordsFailover(t *testing.T) {
	s, g := newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	st := g.Load()
	a, b := st.Targets[0], st.Targets[1]
	rec := s.opts.Recorder
	rec.SetTargets([]string{"a", "b"})
	ended := time.Now()
	rec.clock = func() time.Time { return ended }
	asked := ended.Add(time.Second) // the second the requests ended is complete
	usage := upstream.Usage{Prompt: 30, Completion: 12, HasPrompt: true, HasCompletion: true}
	rec.Finished(&telemetry.Entry{Key: "acme", Status: 200, Target: "b", Latency: 900 * time.Millisecond, Usage: usage,
		Steps: []telemetry.Step{
			{Target: a, Class: upstream.ClassServer, Took: 40 * time.Millisecond},
			{Target: b, Class: upstream.ClassOK, Took: 800 * time.Millisecond},
		}})
	rec.Finished(&telemetry.Entry{Key: "acme", Status: 429, Target: "a", Latency: time.Millisecond,
		Steps: []telemetry.Step{{Target: a, Class: upstream.ClassParked, Skipped: true}}})
	// A committed stream that broke after its first byte: b's call is a
	// failure, judged at the stream's end.
	rec.Finished(&telemetry.Entry{Key: "acme", Status: 200, Target: "b", Stream: true, Class: upstream.ClassTransport,
		Latency: 3 * time.Second, Steps: []telemetry.Step{{Target: b, Class: upstream.ClassOK, Took: 200 * time.Millisecond}}})
	// A client's 400 from b is not b's failure.
	rec.Finished(&telemetry.Entry{Key: "acme", Status: 400, Target: "b", Latency: 5 * time.Millisecond,
		Steps: []telemetry.Step{{Target: b, Class: upstream.ClassClient, Took: 5 * time.Millisecond}}})

	code, h, body := getHistory(t, s, "window=60&step=10", asked)
	if code != 200 || h.Step != 10 || h.Window != 60 || len(h.Targets) != 2 || len(h.Keys) != 1 {
		t.Fatalf("%d %s", code, body)
	}
	ta, tb, k := seriesNamed(h.Targets, "a"), seriesNamed(h.Targets, "b"), seriesNamed(h.Keys, "acme")
	if ta.Total.Requests != 1 || ta.Total.Errors != 1 || ta.Total.Tokens != 0 || ta.Total.ErrorRate != 1 {
		t.Errorf("a (one failed call, one skip): %+v", ta.Total)
	}
	if tb.Total.Requests != 3 || tb.Total.Errors != 1 || tb.Total.Tokens != 42 {
		t.Errorf("b (answered, stream broke, client 400): %+v", tb.Total)
	}
	if k.Total.Requests != 4 || k.Total.Errors != 2 || k.Total.Tokens != 42 {
		t.Errorf("acme: %+v", k.Total)
	}
	if m := tb.LastMinute; m.Requests != 3 || m.Errors != 1 || m.Seconds < 1 || m.Seconds > 60 || math.Abs(float64(m.TokensPerS)-42/float64(m.Seconds)) > 0.01 {
		t.Errorf("b's last minute %+v", m)
	}
	// a's only call took 40 ms: its percentiles sit in the 32–48 ms bucket.
	if p := float64(ta.Total.P50Ms); p < 32 || p >= 48 {
		t.Errorf("a's p50 %v ms; its call took 40 ms", p)
	}
	// The key's p99 is its slowest request's (3 s, in 3–4 s).
	if p := float64(k.Total.P99Ms); p < 3000 || p >= 4000 {
		t.Errorf("acme's p99 %v ms", p)
	}
	// The last point holds them all; its rates are per second of the
	// point's data (the console just started: the seconds since then).
	n := len(tb.RequestsPerS)
	if n != 6 || float64(tb.RequestsPerS[n-1]) <= 0 || float64(tb.ErrorRate[n-1]) != 1.0/3 && math.Abs(float64(tb.ErrorRate[n-1])-0.3333) > 1e-3 {
		t.Errorf("b's points: rps %v errors %v", tb.RequestsPerS, tb.ErrorRate)
	}
	// Points before the console existed have no data: null, not 0.
	if !math.IsNaN(float64(tb.RequestsPerS[0])) || !math.IsNaN(float64(tb.P99Ms[0])) {
		t.Errorf("b's first point %v %v; want null", tb.RequestsPerS[0], tb.P99Ms[0])
	}

	// Naming a target or key answers only those.
	_, h, _ = getHistory(t, s, "target=b", asked)
	if len(h.Targets) != 1 || h.Targets[0].Name != "b" || len(h.Keys) != 0 || h.Window != 900 || len(h.Targets[0].P99Ms) != 90 {
		t.Errorf("target=b: %d targets, %d keys, window %d", len(h.Targets), len(h.Keys), h.Window)
	}
	_, h, _ = getHistory(t, s, "key=acme&key=nobody&step=1&window=30", asked)
	if len(h.Targets) != 0 || len(h.Keys) != 1 || len(h.Keys[0].RequestsPerS) != 30 {
		t.Errorf("key=acme: %+v", h)
	}
	for _, bad := range []string{"window=0", "window=901", "step=x", "step=60&window=30"} {
		if code, _, _ := getHistory(t, s, bad, time.Now()); code != 400 {
			t.Errorf("%s: %d, want 400", bad, code)
		}
	}
}

// A reload keeps a target's and a key's history by name.
func TestHistoryKeptAcrossReload(t *testing.T) {
	rec := NewRecorder([]string{"acme"})
	rec.SetTargets([]string{"a", "b"})
	ha, hk := (*rec.targets.Load())["a"], (*rec.keys.Load())["acme"].history
	rec.SetTargets([]string{"c", "a"})
	rec.SetKeys([]string{"new", "acme"})
	if (*rec.targets.Load())["a"] != ha || (*rec.keys.Load())["acme"].history != hk || (*rec.targets.Load())["b"] != nil ||
		(*rec.targets.Load())["c"] == nil || (*rec.keys.Load())["new"].history == nil {
		t.Error("a reload lost or kept the wrong histories")
	}
	// Past MaxHistories, no history (and no memory) is kept.
	names := make([]string, MaxHistories+3)
	for i := range names {
		names[i] = string(rune('A'+i%26)) + string(rune('0'+i/26))
	}
	rec.SetTargets(names)
	if len(*rec.targets.Load()) != MaxHistories {
		t.Errorf("%d target histories; want %d", len(*rec.targets.Load()), MaxHistories)
	}
}

// failoverEntry is a request that failed over from targets[0] to
// targets[1], which answered.
func failoverEntry(ts []*upstream.Target) *telemetry.Entry {
	return &telemetry.Entry{Key: "acme", Status: 200, Target: ts[1].Name, Latency: 900 * time.Millisecond,
		RequestID: []byte("req-1"), Model: []byte("gpt-4o"), Walked: []string{ts[0].Name, ts[1].Name}, Attempts: 2,
		Usage: upstream.Usage{Prompt: 30, Completion: 12, HasPrompt: true, HasCompletion: true},
		Steps: []telemetry.Step{
			{Target: ts[0], Class: upstream.ClassServer, Took: 40 * time.Millisecond},
			{Target: ts[1], Class: upstream.ClassOK, Took: 800 * time.Millisecond},
		}}
}
