// Package load is a fasthttp load driver for benchmarks on one host.
//
// Closed loop (Rate 0): Connections goroutines each send a request, read
// the whole response and send the next. Open loop (Rate > 0): request i is
// due at start + i/Rate whatever came before; one that waited for a free
// connection counts its latency from when it was due, so queueing behind a
// slow server is measured (no coordinated omission). With Stream, a
// response counts as completed only when it ends with "data: [DONE]", and
// the time to its first byte is recorded too.
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

// Config describes one run. A request is a POST of Body, or a GET without.
type Config struct {
	URL         string // http://host:port/path
	Body        []byte
	Headers     [][2]string
	Connections int           // requests in flight at most; default 64
	Duration    time.Duration // default 5s when Requests is 0
	Requests    int64         // stop after this many (0: by Duration)
	Rate        float64       // requests/s of an open loop; 0: closed loop
	Stream      bool          // read SSE answers
	Timeout     time.Duration // each read and write; default 10s
}

// Result is the outcome of a run. Only 200 answers (streams ending with
// [DONE]) count as completed and in Latency.
type Result struct {
	Completed, Errors int64
	Status            map[int]int64 // by status; transport errors under 0
	FirstError        string
	Elapsed           time.Duration // from the first send to the last answer
	Latency           *Histogram
	FirstEvent        *Histogram // time to the first body byte; nil unless Stream
	Events            int64      // SSE events received, [DONE] included
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
		workers[i] = newWorker(r)
		wg.Go(workers[i].run)
	}
	wg.Wait()
	res := &Result{}
	var last time.Time
	for _, w := range workers {
		res.Merge(&w.res)
		if w.lastDone.After(last) {
			last = w.lastDone
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
	res      Result
	lastDone time.Time
}

func newWorker(r *runner) *worker {
	w := &worker{r: r, req: new(fasthttp.Request), resp: new(fasthttp.Response), buf: make([]byte, 32<<10),
		res: Result{Latency: NewHistogram(), Status: map[int]int64{}}}
	if r.cfg.Stream {
		w.res.FirstEvent = NewHistogram()
	}
	w.req.SetRequestURI(r.cfg.URL)
	if r.cfg.Body != nil {
		w.req.Header.SetMethod(fasthttp.MethodPost)
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
		w.res.Status[0]++
		w.fail(err.Error())
		sleepCtx(w.r.ctx, time.Millisecond) // do not spin on a refused connection
		return
	}
	code := w.resp.StatusCode()
	w.res.Status[code]++
	if !w.r.cfg.Stream {
		if code != 200 {
			w.fail(fmt.Sprintf("status %d: %.200s", code, w.resp.Body()))
			return
		}
		w.done(start, 0)
		return
	}
	ttfe, events, done, err := readStream(w.resp.BodyStream(), w.buf, start)
	_ = w.resp.CloseBodyStream()
	w.res.Events += events
	switch {
	case code != 200:
		w.fail(fmt.Sprintf("status %d", code))
	case err != nil:
		w.fail("stream: " + err.Error())
	case !done:
		w.fail("stream ended without data: [DONE]")
	default:
		w.done(start, ttfe)
	}
}

func (w *worker) done(start time.Time, ttfe time.Duration) {
	w.lastDone = time.Now()
	w.res.Completed++
	w.res.Latency.Record(w.lastDone.Sub(start))
	if w.res.FirstEvent != nil {
		w.res.FirstEvent.Record(ttfe)
	}
}

func (w *worker) fail(msg string) {
	w.lastDone = time.Now()
	w.res.Errors++
	if w.res.FirstError == "" {
		w.res.FirstError = msg
	}
}

var doneFrame = []byte("data: [DONE]\n\n")

// terminalEvents end a stream of the Anthropic Messages API and of the
// OpenAI Responses API, which send no [DONE].
var terminalEvents = [][]byte{[]byte("event: message_stop\n"), []byte("event: response.completed\n")}

// readStream reads an SSE body to its end, returning the time from start to
// the first body byte, the number of events (blank-line separated frames),
// and whether it ended well: its last frame [DONE], or a terminal event of
// the Messages or Responses API seen.
func readStream(r io.Reader, buf []byte, start time.Time) (ttfe time.Duration, events int64, done bool, err error) {
	if r == nil {
		return 0, 0, false, errors.New("no body stream")
	}
	var tail [len("data: [DONE]\n\n")]byte
	tl := 0
	prevNL := false
	first := true
	// edge holds the last bytes seen before this read, so a terminal event
	// split between reads is still seen (in win: edge, then this read's
	// first bytes).
	var edge [32]byte
	var win [64]byte
	el := 0
	terminal := false
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if first {
				ttfe = time.Since(start)
				first = false
			}
			b := buf[:n]
			if !terminal {
				w := append(append(win[:0], edge[:el]...), b[:min(n, len(edge))]...)
				for _, m := range terminalEvents {
					if bytes.Contains(b, m) || bytes.Contains(w, m) {
						terminal = true
					}
				}
				if n >= len(edge) {
					el = copy(edge[:], b[n-len(edge):])
				} else {
					keep := min(el, len(edge)-n)
					copy(edge[:], edge[el-keep:el])
					el = keep + copy(edge[keep:], b)
				}
			}
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
	return ttfe, events, terminal || bytes.Equal(tail[:tl], doneFrame), nil
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
