package hotpath

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// record is a copy of a telemetry.Entry (which is valid only during the
// Finished call).
type record struct {
	RequestID, Model string
	Surface          router.Surface
	Rule             int
	Walked           []string
	Target           string
	Attempts, Status int
	Class            upstream.Class
	Stream           bool
}

type recorder struct {
	mu   sync.Mutex
	recs []record
	ch   chan struct{}
}

func newRecorder() *recorder { return &recorder{ch: make(chan struct{}, 100)} }

func (r *recorder) finished(e *telemetry.Entry) {
	r.mu.Lock()
	r.recs = append(r.recs, record{
		RequestID: string(e.RequestID), Model: string(e.Model), Surface: e.Surface, Rule: e.Rule,
		Walked: slices.Clone(e.Walked), Target: e.Target, Attempts: e.Attempts, Status: e.Status,
		Class: e.Class, Stream: e.Stream,
	})
	r.mu.Unlock()
	r.ch <- struct{}{}
}

// next waits for the next record.
func (r *recorder) next(t *testing.T) record {
	t.Helper()
	select {
	case <-r.ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no record")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.recs[0]
	r.recs = r.recs[1:]
	return rec
}

// countingObserver counts the events forwarded to Gateway.Observer.
type countingObserver struct {
	mu                                  sync.Mutex
	attempts, skips, failovers, streams int
}

func (o *countingObserver) Attempt(*upstream.Target, upstream.Class, int, time.Duration) {
	o.mu.Lock()
	o.attempts++
	o.mu.Unlock()
}
func (o *countingObserver) Skip(*upstream.Target, upstream.Class) {
	o.mu.Lock()
	o.skips++
	o.mu.Unlock()
}
func (o *countingObserver) Failover(*upstream.Target, upstream.Class) {
	o.mu.Lock()
	o.failovers++
	o.mu.Unlock()
}
func (o *countingObserver) StreamEnd(upstream.Result, time.Duration) {
	o.mu.Lock()
	o.streams++
	o.mu.Unlock()
}

func (o *countingObserver) counts() [4]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return [4]int{o.attempts, o.skips, o.failovers, o.streams}
}

func TestFinishedRecords(t *testing.T) {
	a, b, _, _, all := chainMocks(t)
	tg := startGateway(t, chainConfig, all...)
	rec := newRecorder()
	obs := &countingObserver{}
	tg.g.Finished = rec.finished
	tg.g.Observer = obs

	a.setFault(fault503)
	r := tg.do("POST", "/v1/chat/completions", `{"model":"m"}`, "X-Request-Id", "req-1")
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	want := record{RequestID: "req-1", Model: "m", Surface: router.SurfaceChat, Rule: 0, Walked: []string{"a", "b"},
		Target: "b", Attempts: 2, Status: 200, Class: upstream.ClassOK}
	if got := rec.next(t); !recordsEqual(got, want) {
		t.Errorf("non-stream record\n got %+v\nwant %+v", got, want)
	}
	if got := obs.counts(); got != [4]int{2, 0, 1, 0} {
		t.Errorf("observer got attempts/skips/failovers/streams %v, want [2 0 1 0]", got)
	}

	// A stream's record comes once the stream has ended.
	r = tg.do("POST", "/v1/chat/completions", `{"model":"m","stream":true}`, "X-Request-Id", "req-2")
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	want = record{RequestID: "req-2", Model: "m", Surface: router.SurfaceChat, Rule: 0, Walked: []string{"a", "b"},
		Target: "b", Attempts: 2, Status: 200, Class: upstream.ClassOK, Stream: true}
	if got := rec.next(t); !recordsEqual(got, want) {
		t.Errorf("stream record\n got %+v\nwant %+v", got, want)
	}
	if got := obs.counts(); got[3] != 1 {
		t.Errorf("StreamEnd forwarded %d times", got[3])
	}

	// Refused before routing, and refused after routing.
	tg.do("POST", "/v1/embeddings", `{"model":1}`, "X-Request-Id", "req-3")
	want = record{RequestID: "req-3", Surface: router.SurfaceEmbeddings, Rule: telemetry.RuleNotRouted, Status: 400, Class: upstream.ClassClient}
	if got := rec.next(t); !recordsEqual(got, want) {
		t.Errorf("400 record\n got %+v\nwant %+v", got, want)
	}
	tg.do("POST", "/v1/completions", `{"model":"nope"}`, "X-Request-Id", "req-4")
	want = record{RequestID: "req-4", Model: "nope", Surface: router.SurfaceCompletions, Rule: -1, Status: 404, Class: upstream.ClassClient}
	if got := rec.next(t); !recordsEqual(got, want) {
		t.Errorf("404 record\n got %+v\nwant %+v", got, want)
	}
	// The gateway's own endpoints are not API requests.
	tg.do("GET", "/healthz", "")
	tg.do("GET", "/v1/models", "")
	select {
	case <-rec.ch:
		t.Error("a record for a non-API request")
	case <-time.After(50 * time.Millisecond):
	}
	_ = b
}

func recordsEqual(a, b record) bool {
	return a.RequestID == b.RequestID && a.Model == b.Model && a.Surface == b.Surface && a.Rule == b.Rule &&
		slices.Equal(a.Walked, b.Walked) && a.Target == b.Target && a.Attempts == b.Attempts &&
		a.Status == b.Status && a.Class == b.Class && a.Stream == b.Stream
}

func TestFinishedUnderConcurrentStreams(t *testing.T) {
	// Many streams at once: every request yields exactly one record, with
	// its own id, whichever of Walk and StreamEnd finishes last.
	_, _, _, _, all := chainMocks(t)
	// 64 requests at once on a busy machine (the race detector, other test
	// binaries) can outlast chainConfig's 300 ms attempt timeouts; this test
	// is about records, not timeouts, so its attempts get room.
	tg := startGateway(t, strings.ReplaceAll(chainConfig, "timeout: 300ms", "timeout: 10s"), all...)
	rec := newRecorder()
	rec.ch = make(chan struct{}, 1000)
	tg.g.Finished = rec.finished
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := "s-" + string(rune('A'+i%26)) + string(rune('a'+i/26))
			r := tg.do("POST", "/v1/chat/completions", `{"model":"m","stream":`+[]string{"true", "false"}[i%2]+`}`, "X-Request-Id", id)
			if r.Status != 200 {
				t.Errorf("%s: %d", id, r.Status)
			}
		})
	}
	wg.Wait()
	deadline := time.After(5 * time.Second)
	for range n {
		select {
		case <-rec.ch:
		case <-deadline:
			t.Fatal("missing records")
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	seen := map[string]bool{}
	for _, r := range rec.recs {
		if seen[r.RequestID] || r.Target != "a" || r.Status != 200 {
			t.Errorf("record %+v (duplicate or wrong)", r)
		}
		seen[r.RequestID] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct records, want %d", len(seen), n)
	}
}

// A request answered before any configuration was loaded is recorded as not
// routed (not as the fallback) and still carries a request id.
func TestFinishedNoConfigIsNotRouted(t *testing.T) {
	g := New(nil)
	rec := newRecorder()
	g.Finished = rec.finished
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod("POST")
	rc.Request.SetRequestURI("/v1/chat/completions")
	rc.Request.SetBodyString(`{"model":"m"}`)
	g.Handler(&rc)
	got := rec.next(t)
	if got.Rule != telemetry.RuleNotRouted || got.Status != 503 || got.RequestID == "" ||
		got.RequestID != string(rc.Response.Header.Peek("X-Request-Id")) {
		t.Fatalf("record %+v, response id %q", got, rc.Response.Header.Peek("X-Request-Id"))
	}
}

// TestNoteDropped: the record names the tools of the answer's
// X-Gateway-Dropped-Tools field however it was set (fasthttp stores names
// in canonical form), and nothing when the answer has none.
func TestNoteDropped(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"", ""},
		{"X-Gateway-Dropped-Tools", "web_search, file_search"},
		{"x-gateway-dropped-tools", "web_search, file_search"},
	} {
		var rc fasthttp.RequestCtx
		rc.Response.Header.SetCanonical([]byte("X-Request-Id"), []byte("r"))
		rc.Response.Header.SetContentType("application/json")
		if tc.set != "" {
			rc.Response.Header.Set(tc.set, "web_search, file_search")
		}
		rc.Response.Header.SetCanonical([]byte("X-Gateway-Target"), []byte("a"))
		tr := &tracker{dropped: []byte("stale")}
		tr.noteDropped(&rc)
		if got := string(tr.entry.DroppedTools); got != tc.want || (tc.want == "") != (tr.entry.DroppedTools == nil) {
			t.Errorf("set as %q: record names %q, want %q", tc.set, got, tc.want)
		}
	}
}
