package load

import (
	"context"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/switchyard/switchyard/mock"
)

func TestHistogramBuckets(t *testing.T) {
	for i := range numBuckets - 1 {
		hi := bucketHigh(i)
		if bucketOf(hi) != i || bucketOf(hi+1) != i+1 {
			t.Fatalf("bucket %d: high %d maps to %d, high+1 to %d", i, hi, bucketOf(hi), bucketOf(hi+1))
		}
	}
}

func TestHistogramQuantilesMatchExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := NewHistogram()
	a, b := NewHistogram(), NewHistogram()
	var vals []int64
	for i := range 100000 {
		// Log-uniform from 100ns to ~100ms, like real latencies.
		v := int64(float64(int64(100)<<rng.IntN(20)) * (1 + rng.Float64()))
		vals = append(vals, v)
		h.Record(time.Duration(v))
		if i%2 == 0 {
			a.Record(time.Duration(v))
		} else {
			b.Record(time.Duration(v))
		}
	}
	a.Merge(b)
	slices.Sort(vals)
	for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.99, 0.999, 1} {
		rank := max(int(float64(len(vals))*q+0.999999)-1, 0)
		exact := float64(vals[rank])
		got := float64(h.Quantile(q))
		if got < exact || got > exact*(1+1.0/subCount) {
			t.Errorf("q%.3f: got %.0f, exact %.0f", q, got, exact)
		}
		if a.Quantile(q) != h.Quantile(q) {
			t.Errorf("q%.3f: merged halves %v != whole %v", q, a.Quantile(q), h.Quantile(q))
		}
	}
	if h.Count() != 100000 || h.Quantile(1) != time.Duration(vals[len(vals)-1]) {
		t.Fatalf("count %d max %v", h.Count(), h.Quantile(1))
	}
	e := NewHistogram()
	if e.Quantile(0.5) != 0 {
		t.Fatal("empty histogram not zero")
	}
	e.Record(-5)
	if e.Quantile(1) != 0 {
		t.Fatal("negative not clamped to 0")
	}
}

func TestReadStreamSplitReads(t *testing.T) {
	body := "data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n"
	for i, src := range []io.Reader{strings.NewReader(body), iotest.OneByteReader(strings.NewReader(body))} {
		_, events, done, err := readStream(src, make([]byte, 7), time.Now())
		if err != nil || events != 3 || !done {
			t.Fatalf("reader %d: events %d done %v err %v", i, events, done, err)
		}
	}
	_, events, done, err := readStream(strings.NewReader("data: x\n\ndata: [DONE]\n\ndata: y\n\n"), make([]byte, 4), time.Now())
	if err != nil || events != 3 || done {
		t.Fatalf("[DONE] not last: events %d done %v err %v", events, done, err)
	}
	// The Messages and Responses APIs end with their own terminal events,
	// however the reads cut them.
	for _, body := range []string{
		"event: message_start\ndata: {}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		"event: response.created\ndata: {}\n\nevent: response.completed\ndata: {\"response\":{}}\n\n",
	} {
		for _, size := range []int{1, 5, 13, 64, 4096} {
			if _, events, done, err := readStream(strings.NewReader(body), make([]byte, size), time.Now()); err != nil || events != 2 || !done {
				t.Fatalf("%.30q in reads of %d: events %d done %v err %v", body, size, events, done, err)
			}
		}
		cut := strings.Replace(body, "_stop", "_delta", 1)
		cut = strings.Replace(cut, ".completed", ".in_progress", 1)
		if _, _, done, _ := readStream(strings.NewReader(cut), make([]byte, 5), time.Now()); done {
			t.Fatalf("%.30q: done without a terminal event", cut)
		}
	}
	if _, _, _, err := readStream(iotest.TimeoutReader(strings.NewReader("data: x\n\n")), make([]byte, 64), time.Now()); err == nil {
		t.Fatal("read error not reported")
	}
}

func startMock(t *testing.T, o mock.Options) *mock.Server {
	t.Helper()
	s, err := mock.Start("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestClosedLoopCountsEveryRequest(t *testing.T) {
	m := startMock(t, mock.Options{})
	res, err := Run(context.Background(), Config{
		URL: "http://" + m.Addr() + "/v1/chat/completions", Body: []byte(`{"model":"m"}`),
		Connections: 8, Requests: 500,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 500 || res.Errors != 0 || res.Latency.Count() != 500 || res.Status[200] != 500 {
		t.Fatalf("%v %v", res, res.Status)
	}
	if st := m.Stats(); st.ByPath["/v1/chat/completions"] != 500 {
		t.Fatalf("mock saw %d", st.ByPath["/v1/chat/completions"])
	}
	if res.Throughput() <= 0 || res.Latency.Quantile(0.5) <= 0 || res.Latency.Quantile(0.5) > res.Latency.Quantile(0.99) {
		t.Fatalf("implausible figures: %v", res)
	}
}

func TestErrorsAreNotLatency(t *testing.T) {
	m := startMock(t, mock.Options{FailRate: 1, FailStatus: 503})
	res, err := Run(context.Background(), Config{
		URL: "http://" + m.Addr() + "/v1/chat/completions", Body: []byte(`{"model":"m"}`),
		Connections: 2, Requests: 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 0 || res.Errors != 20 || res.Status[503] != 20 || res.Latency.Count() != 0 ||
		!strings.Contains(res.FirstError, "status 503") {
		t.Fatalf("%v %v", res, res.Status)
	}
	// A closed port is a transport error.
	dead := m.Addr()
	_ = m.Close()
	res, _ = Run(context.Background(), Config{URL: "http://" + dead + "/", Connections: 1, Requests: 3})
	if res.Errors != 3 || res.Status[0] != 3 {
		t.Fatalf("dead upstream: %v %v", res, res.Status)
	}
}

func TestStreamFirstEvent(t *testing.T) {
	m := startMock(t, mock.Options{StreamEvents: 5, StreamInterval: time.Millisecond})
	res, err := Run(context.Background(), Config{
		URL: "http://" + m.Addr() + "/v1/chat/completions", Body: []byte(`{"model":"m","stream":true}`),
		Connections: 4, Requests: 40, Stream: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 40 || res.Events != 40*6 || res.FirstEvent.Count() != 40 {
		t.Fatalf("%v events %d", res, res.Events)
	}
	// The first event precedes the end, which is at least 4 intervals later.
	if res.FirstEvent.Quantile(1) >= res.Latency.Quantile(1) || res.Latency.Quantile(0) < 4*time.Millisecond {
		t.Fatalf("first event ..%v, total %v..%v", res.FirstEvent.Quantile(1), res.Latency.Quantile(0), res.Latency.Quantile(1))
	}

	m.Fail(mock.Failure{Kind: mock.KindCut, After: 2})
	res, _ = Run(context.Background(), Config{
		URL: "http://" + m.Addr() + "/v1/chat/completions", Body: []byte(`{"model":"m","stream":true}`),
		Connections: 2, Requests: 6, Stream: true,
	})
	if res.Completed != 0 || res.Errors != 6 {
		t.Fatalf("cut streams: %v", res)
	}
	m.Fail(mock.Failure{Kind: mock.KindSSEError})
	res, _ = Run(context.Background(), Config{
		URL: "http://" + m.Addr() + "/v1/chat/completions", Body: []byte(`{"model":"m","stream":true}`),
		Connections: 2, Requests: 6, Stream: true,
	})
	if res.Completed != 0 || res.Errors != 6 || !strings.Contains(res.FirstError, "without data: [DONE]") {
		t.Fatalf("error-event streams: %v", res)
	}
}

func TestOpenLoopIssuesOnSchedule(t *testing.T) {
	m := startMock(t, mock.Options{})
	res, err := Run(context.Background(), Config{
		URL: "http://" + m.Addr() + "/v1/embeddings", Body: []byte(`{"model":"m","input":"x"}`),
		Connections: 4, Rate: 400, Duration: 250 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Due times are i/400 s for i < 100: exactly 100 requests.
	if res.Completed != 100 || m.Stats().Requests != 100 {
		t.Fatalf("%v, mock %d", res, m.Stats().Requests)
	}
	if res.Elapsed < 240*time.Millisecond {
		t.Fatalf("100 requests at 400/s done in %v", res.Elapsed)
	}
}

// TestOpenLoopCountsQueueing checks coordinated omission is avoided: one
// connection to a 20 ms server offered a request every 5 ms falls behind, and
// the wait for the connection is latency. Request i is due at 5i ms but
// cannot start before 20i ms, so the last of 40 waits at least 15*39+20 ms.
func TestOpenLoopCountsQueueing(t *testing.T) {
	m := startMock(t, mock.Options{Latency: 20 * time.Millisecond})
	res, err := Run(context.Background(), Config{
		URL: "http://" + m.Addr() + "/v1/embeddings", Body: []byte(`{"model":"m","input":"x"}`),
		Connections: 1, Rate: 200, Duration: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 40 || res.Latency.Quantile(1) < 605*time.Millisecond || res.Latency.Quantile(0) < 20*time.Millisecond {
		t.Fatalf("%v (max %v)", res, res.Latency.Quantile(1))
	}
}

func TestBadConfig(t *testing.T) {
	for _, u := range []string{"", "https://x/", "127.0.0.1:80", "http:///x"} {
		if _, err := Run(context.Background(), Config{URL: u}); err == nil {
			t.Errorf("URL %q accepted", u)
		}
	}
	if _, err := Run(context.Background(), Config{URL: "http://127.0.0.1:1/", Rate: -1}); err == nil {
		t.Error("negative rate accepted")
	}
}

func TestCancel(t *testing.T) {
	m := startMock(t, mock.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res, err := Run(ctx, Config{URL: "http://" + m.Addr() + "/v1/models", Connections: 2, Duration: time.Minute})
	if err == nil || res.Completed == 0 || res.Elapsed > 30*time.Second {
		t.Fatalf("cancel: %v %v", err, res)
	}
}

func TestResultMerge(t *testing.T) {
	a := &Result{Completed: 10, Errors: 1, Elapsed: time.Second, Status: map[int]int64{200: 10, 503: 1}, Latency: NewHistogram()}
	a.Latency.Record(time.Millisecond)
	b := &Result{Completed: 30, Elapsed: time.Second, Status: map[int]int64{200: 30}, Latency: NewHistogram(),
		FirstEvent: NewHistogram(), FirstError: "x", Events: 7}
	b.Latency.Record(3 * time.Millisecond)
	b.FirstEvent.Record(time.Microsecond)
	var sum Result
	sum.Merge(a)
	sum.Merge(b)
	if sum.Completed != 40 || sum.Errors != 1 || sum.Throughput() != 20 || sum.Status[200] != 40 || sum.Status[503] != 1 ||
		sum.Latency.Count() != 2 || sum.Latency.Quantile(1) != 3*time.Millisecond || sum.FirstEvent.Count() != 1 ||
		sum.FirstError != "x" || sum.Events != 7 {
		t.Fatalf("%+v", sum)
	}
}

func TestPreciseSleeperWaits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{r: &runner{ctx: ctx}}
	ps := newPreciseSleeper()
	defer ps.close()
	for _, d := range []time.Duration{time.Nanosecond, 200 * time.Microsecond, 2 * time.Millisecond} {
		start := time.Now()
		if !ps.sleep(w, d) {
			t.Fatalf("sleep(%v) = false with a live context", d)
		}
		// A timer never fires early; the upper bound is left to the
		// scheduler.
		if got := time.Since(start); got < d {
			t.Errorf("sleep(%v) returned after %v", d, got)
		}
	}
	cancel()
	if ps.sleep(w, time.Microsecond) {
		t.Error("sleep after cancel = true")
	}
}
