// Package load is a fasthttp load driver for HTTP benchmarks on one host.
//
// Closed loop (Config.Rate 0): Connections goroutines each send a request,
// wait for the whole response, and send the next, for Duration or until
// Requests have been sent; throughput at that concurrency is the result.
//
// Open loop (Config.Rate > 0): requests are due at fixed intervals
// (start + i/Rate) whether or not earlier ones have finished; up to
// Connections are in flight. A request's latency is measured from the moment
// it was due when it had to wait for a free connection (so queueing behind a
// slow server counts, avoiding coordinated omission), and from its actual
// send otherwise (so the driver's own timer slack does not).
//
// Streaming (Config.Stream): the response body is read as it arrives; the
// time to the first body byte (the first SSE event) is recorded next to the
// total latency, and a stream counts as completed only when it ends with
// "data: [DONE]".
package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Config describes one load run.
type Config struct {
	// URL is the target, http://host:port/path. Required.
	URL string
	// Method defaults to POST when Body is set, else GET.
	Method string
	// Body is sent with every request. Default none.
	Body []byte
	// Headers are added to every request as name, value pairs.
	Headers [][2]string
	// Connections is the number of concurrent connections (and of requests
	// in flight). Default 64.
	Connections int
	// Duration bounds the run. Default 5s when Requests is 0.
	Duration time.Duration
	// Requests bounds the number of requests sent (0 = by Duration only).
	Requests int64
	// Rate is the offered load in requests/s for an open-loop run; 0 runs a
	// closed loop.
	Rate float64
	// Stream reads responses as SSE streams and records time to first event.
	Stream bool
	// Timeout bounds each read and write of a request. Default 10s.
	Timeout time.Duration
	// ExpectStatus is the status that counts as success. Default 200.
	ExpectStatus int
}

// Result is the outcome of a run. Latency holds successful requests only;
// failures are counted in Errors and Status.
type Result struct {
	// Completed counts requests answered with ExpectStatus (streams: ending
	// with [DONE]).
	Completed int64
	// Errors counts the others: transport errors, other statuses, streams
	// cut short.
	Errors int64
	// Status counts responses by status; transport errors count under 0.
	Status map[int]int64
	// FirstError describes the first failure seen ("" when none).
	FirstError string
	// Elapsed is the wall time from the first send to the last response.
	Elapsed time.Duration
	// Latency is the distribution of successful request latencies.
	Latency *Histogram
	// FirstEvent is the distribution of times to the first body byte of
	// successful streams; nil unless Config.Stream.
	FirstEvent *Histogram
	// Events counts SSE events received (the [DONE] frame included).
	Events int64
	// Rate is the offered load of an open-loop run (0 for a closed loop).
	Rate float64
}

// Throughput is successful requests per second.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Completed) / r.Elapsed.Seconds()
}

// String summarises r on one line.
func (r *Result) String() string {
	s := fmt.Sprintf("%d ok, %d errors in %v: %.0f req/s, p50 %v p99 %v p99.9 %v",
		r.Completed, r.Errors, r.Elapsed.Round(time.Millisecond), r.Throughput(),
		r.Latency.Quantile(0.5), r.Latency.Quantile(0.99), r.Latency.Quantile(0.999))
	if r.FirstEvent != nil {
		s += fmt.Sprintf(", first event p50 %v p99 %v", r.FirstEvent.Quantile(0.5), r.FirstEvent.Quantile(0.99))
	}
	if r.FirstError != "" {
		s += "; first error: " + r.FirstError
	}
	return s
}

// Run drives load as cfg says until it is done or ctx is cancelled.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("load: URL %q: want http://host:port/path", cfg.URL)
	}
	if cfg.Connections <= 0 {
		cfg.Connections = 64
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		cfg.Duration = 5 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.ExpectStatus == 0 {
		cfg.ExpectStatus = 200
	}
	if cfg.Method == "" {
		cfg.Method = fasthttp.MethodGet
		if cfg.Body != nil {
			cfg.Method = fasthttp.MethodPost
		}
	}
	if cfg.Rate < 0 {
		return nil, errors.New("load: negative Rate")
	}

	client := &fasthttp.HostClient{
		Addr:                          u.Host,
		MaxConns:                      cfg.Connections,
		MaxIdleConnDuration:           time.Minute,
		ReadTimeout:                   cfg.Timeout,
		WriteTimeout:                  cfg.Timeout,
		StreamResponseBody:            cfg.Stream,
		DisablePathNormalizing:        true,
		NoDefaultUserAgentHeader:      true,
		DisableHeaderNamesNormalizing: true,
		RetryIfErr:                    func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
	}
	defer client.CloseIdleConnections()

	r := &runner{cfg: cfg, client: client, ctx: ctx}
	r.start = time.Now()
	if cfg.Duration > 0 {
		r.deadline = r.start.Add(cfg.Duration)
	}
	workers := make([]*worker, cfg.Connections)
	var wg sync.WaitGroup
	for i := range workers {
		w := newWorker(r)
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run()
		}()
	}
	wg.Wait()

	res := &Result{Latency: NewHistogram(), Status: map[int]int64{}, Rate: cfg.Rate}
	if cfg.Stream {
		res.FirstEvent = NewHistogram()
	}
	var last time.Time
	for _, w := range workers {
		res.Completed += w.ok
		res.Errors += w.errs
		res.Events += w.events
		res.Latency.Merge(w.lat)
		if cfg.Stream {
			res.FirstEvent.Merge(w.ttfe)
		}
		for k, v := range w.status {
			res.Status[k] += v
		}
		if w.lastDone.After(last) {
			last = w.lastDone
		}
		if res.FirstError == "" {
			res.FirstError = w.firstErr
		}
	}
	if !last.IsZero() {
		res.Elapsed = last.Sub(r.start)
	}
	return res, ctx.Err()
}

// runner is the state shared by a run's workers.
type runner struct {
	cfg      Config
	client   *fasthttp.HostClient
	ctx      context.Context
	start    time.Time
	deadline time.Time // zero: no time bound
	issued   atomic.Int64
}

// next claims the next request slot; ok is false when the run is over. due
// is when an open-loop request should be sent (zero for a closed loop).
func (r *runner) next() (due time.Time, ok bool) {
	if r.ctx.Err() != nil {
		return time.Time{}, false
	}
	i := r.issued.Add(1) - 1
	if r.cfg.Requests > 0 && i >= r.cfg.Requests {
		return time.Time{}, false
	}
	if r.cfg.Rate > 0 {
		due = r.start.Add(time.Duration(float64(i) / r.cfg.Rate * float64(time.Second)))
		if !r.deadline.IsZero() && !due.Before(r.deadline) {
			return time.Time{}, false
		}
		return due, true
	}
	if !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
		return time.Time{}, false
	}
	return time.Time{}, true
}

// worker drives one connection's worth of requests.
type worker struct {
	r        *runner
	req      *fasthttp.Request
	resp     *fasthttp.Response
	buf      []byte
	lat      *Histogram
	ttfe     *Histogram
	status   map[int]int64
	ok, errs int64
	events   int64
	firstErr string
	lastDone time.Time
}

func newWorker(r *runner) *worker {
	w := &worker{
		r: r, req: new(fasthttp.Request), resp: new(fasthttp.Response),
		lat: NewHistogram(), status: map[int]int64{}, buf: make([]byte, 32<<10),
	}
	if r.cfg.Stream {
		w.ttfe = NewHistogram()
	}
	w.req.SetRequestURI(r.cfg.URL)
	w.req.Header.SetMethod(r.cfg.Method)
	if r.cfg.Body != nil {
		w.req.SetBody(r.cfg.Body)
		w.req.Header.SetContentType("application/json")
	}
	for _, h := range r.cfg.Headers {
		w.req.Header.Set(h[0], h[1])
	}
	return w
}

// maxPrecise is the longest open-loop wait taken with the precise sleeper.
const maxPrecise = 50 * time.Millisecond

func (w *worker) run() {
	var ps *preciseSleeper
	if w.r.cfg.Rate > 0 {
		ps = newPreciseSleeper()
		defer ps.close()
	}
	for {
		due, ok := w.r.next()
		if !ok {
			return
		}
		start := time.Now()
		if !due.IsZero() {
			if wait := due.Sub(start); wait > 0 {
				// Early: sleep, and measure from the actual send.
				if !ps.sleep(w, wait) {
					return
				}
				start = time.Now()
			} else {
				// Late: the request waited for a free connection; that wait
				// is latency the server caused.
				start = due
			}
		}
		w.one(start)
	}
}

func (w *worker) one(start time.Time) {
	err := w.r.client.Do(w.req, w.resp)
	if err != nil {
		w.fail(0, err.Error())
		// Do not spin on a refused connection.
		sleepCtx(w.r.ctx, time.Millisecond)
		return
	}
	code := w.resp.StatusCode()
	w.status[code]++
	if !w.r.cfg.Stream {
		w.lastDone = time.Now()
		if code != w.r.cfg.ExpectStatus {
			w.fail(-1, fmt.Sprintf("status %d: %.200s", code, w.resp.Body()))
			return
		}
		w.ok++
		w.lat.Record(w.lastDone.Sub(start))
		return
	}
	ttfe, events, done, err := readStream(w.resp.BodyStream(), w.buf, start)
	_ = w.resp.CloseBodyStream()
	w.lastDone = time.Now()
	w.events += events
	switch {
	case code != w.r.cfg.ExpectStatus:
		w.fail(-1, fmt.Sprintf("status %d", code))
	case err != nil:
		w.fail(-1, "stream: "+err.Error())
	case !done:
		w.fail(-1, "stream ended without data: [DONE]")
	default:
		w.ok++
		w.lat.Record(w.lastDone.Sub(start))
		w.ttfe.Record(ttfe)
	}
}

// fail counts a failure; status 0 counts under Status[0] (transport error),
// -1 means the status is already counted.
func (w *worker) fail(status int, msg string) {
	w.lastDone = time.Now()
	if status == 0 {
		w.status[0]++
	}
	w.errs++
	if w.firstErr == "" {
		w.firstErr = msg
	}
}

var doneFrame = []byte("data: [DONE]\n\n")

// readStream reads an SSE body to its end, returning the time from start to
// the first body byte, the number of events (blank-line separated frames),
// and whether the last frame was [DONE].
func readStream(r io.Reader, buf []byte, start time.Time) (ttfe time.Duration, events int64, done bool, err error) {
	if r == nil {
		return 0, 0, false, errors.New("no body stream")
	}
	var tail [len("data: [DONE]\n\n")]byte
	tl := 0
	prevNL := false
	first := true
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if first {
				ttfe = time.Since(start)
				first = false
			}
			b := buf[:n]
			events += int64(bytes.Count(b, []byte("\n\n")))
			if prevNL && b[0] == '\n' {
				events++
			}
			prevNL = b[n-1] == '\n'
			// Keep the last len(tail) bytes seen.
			if n >= len(tail) {
				tl = copy(tail[:], b[n-len(tail):])
			} else {
				keep := min(tl, len(tail)-n)
				copy(tail[:], tail[tl-keep:tl])
				tl = keep + copy(tail[keep:], b)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return ttfe, events, false, rerr
		}
	}
	return ttfe, events, bytes.Equal(tail[:tl], doneFrame), nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Merge adds o to r as if both runs were one: counts and histograms add up,
// and so do the elapsed times (the runs were back to back, not concurrent).
func (r *Result) Merge(o *Result) {
	r.Completed += o.Completed
	r.Errors += o.Errors
	r.Events += o.Events
	r.Elapsed += o.Elapsed
	if r.Status == nil {
		r.Status = map[int]int64{}
	}
	for k, v := range o.Status {
		r.Status[k] += v
	}
	if r.FirstError == "" {
		r.FirstError = o.FirstError
	}
	if r.Latency == nil {
		r.Latency = NewHistogram()
	}
	r.Latency.Merge(o.Latency)
	if o.FirstEvent != nil {
		if r.FirstEvent == nil {
			r.FirstEvent = NewHistogram()
		}
		r.FirstEvent.Merge(o.FirstEvent)
	}
}
