package upstream

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/provider/translate"
)

// Response headers set by Walk on every proxied response (docs/api.md, HTTP surface and headers). The hot
// path sets X-Gateway-Rule and X-Request-Id itself.
const (
	HeaderTarget   = "X-Gateway-Target"
	HeaderProvider = "X-Gateway-Provider"
	HeaderModel    = "X-Gateway-Model"
	HeaderAttempts = "X-Gateway-Attempts"
)

// Result is what a walk did, for the access log and metrics.
type Result struct {
	// Target is the last member tried or skipped; nil only for an empty
	// chain.
	Target *Target
	// Attempts is the number of upstream calls made (skips not counted).
	Attempts int
	// Failovers is the number of times the walk moved to a next member.
	Failovers int
	// Status is the HTTP status written to the client (for a committed
	// stream: 200).
	Status int
	// Class is the final outcome: ClassOK on success, else the class that
	// decided the error (for a committed stream: ClassOK at commit; the
	// stream's own outcome goes to Observer.StreamEnd).
	Class Class
	// TTFB is the time from the walk's start to the first byte from the
	// upstream that answered (response headers; for a stream, its first
	// event). 0 when no upstream answered.
	TTFB time.Duration
	// Stream is true when a stream was committed: the body is written after
	// the handler returns, and Observer.StreamEnd reports its end.
	Stream bool
	// End is the walk's last clock reading, taken when its last upstream
	// call (or wait) ended, its error body read: the request's end for a
	// non-streamed answer, without reading the clock again (translating a
	// success for the client, microseconds, comes after it).
	End time.Time
	// Usage is the token usage of a successful answer, read from the
	// provider's own fields (provider.AnswerUsage of the upstream's body;
	// for a stream, the decoder's last usage event, reported to
	// Observer.StreamEnd of a stream that ended ClassOK). The zero value:
	// none reported.
	Usage Usage
	// Fenced is true when the residency guard (Call.Fence) stopped the
	// walk before calling Target: answered 500 internal_error.
	Fenced bool
	// ResponseID is the response id of a committed Responses API stream,
	// from its response.created event (owned copy); nil otherwise.
	ResponseID []byte
	// ItemIDs are the ids of the output items a Responses API stream's
	// terminal event listed (provider.ItemReporter), reported to
	// Observer.StreamEnd of a stream that ended ClassOK; nil otherwise.
	ItemIDs []string
}

// Observer receives the events of a walk, for metrics and logs. Methods
// must be quick and safe for concurrent use. Attempt, Skip and Failover are
// called synchronously from Walk. StreamEnd is called from the goroutine
// that relays a committed stream (fasthttp's stream writer): it can run
// before Walk has returned as well as long after the handler returned, so
// it must not touch the RequestCtx or anything pooled per request.
type Observer interface {
	// Attempt reports one upstream call: its class, the HTTP status (0 for
	// a transport error or timeout) and how long it took.
	Attempt(t *Target, class Class, status int, took time.Duration)
	// Skip reports a member passed over without a call: ClassParked,
	// ClassCircuitOpen or ClassSaturated.
	Skip(t *Target, class Class)
	// Failover reports that the walk leaves member t after class.
	Failover(t *Target, class Class)
	// StreamEnd reports the end of a committed stream: r is the walk's
	// Result with Class set to the stream's outcome (ClassOK, an upstream
	// failure class, or ClassCanceled when the client went away), and
	// took is the stream's duration from the start of the walk.
	StreamEnd(r Result, took time.Duration)
}

// NopObserver is an Observer that does nothing.
type NopObserver struct{}

// Attempt implements Observer.
func (NopObserver) Attempt(*Target, Class, int, time.Duration) {}

// Skip implements Observer.
func (NopObserver) Skip(*Target, Class) {}

// Failover implements Observer.
func (NopObserver) Failover(*Target, Class) {}

// StreamEnd implements Observer.
func (NopObserver) StreamEnd(Result, time.Duration) {}

// Walk sends call to the members of chain in order (retrying, parking and
// failing over as docs/routing.md, 5 says) and writes the final answer into
// rc's response with the X-Gateway-* headers. chain holds only the
// candidates for the model and surface: Walk never calls anything else.
// deadline is the request deadline; obs may be nil. A committed stream is
// relayed after Walk returns and leaves a write deadline on the client
// connection, so the server must set WriteTimeout. call.Body and
// call.Model must stay valid until Walk returns. See docs/design.md.
func Walk(rc *fasthttp.RequestCtx, call *Call, chain []*Target, deadline time.Time, obs Observer) Result {
	return walkWith(rc, call, chain, deadline, obs, realClock)
}

// clock is the walk's view of time; tests replace sleep to observe backoff.
type clock struct {
	now   func() time.Time
	sleep func(time.Duration)
	// jitter returns a uniform duration in [0, d).
	jitter func(d time.Duration) time.Duration
}

var realClock = &clock{
	now:   time.Now,
	sleep: time.Sleep,
	jitter: func(d time.Duration) time.Duration {
		if d <= 0 {
			return 0
		}
		return time.Duration(rand.Int64N(int64(d)))
	},
}

// outcome is one member's (or attempt's) failure, kept until the walk ends.
type outcome struct {
	class  Class
	status int
	// envelope is the client-facing error body for ClassClient and
	// ClassContextLength (owned copy).
	envelope []byte
	// retryAfter is the upstream's Retry-After value (owned copy), if any.
	retryAfter []byte
	// framed: a stream's error arrived as the upstream's own error event,
	// already in the frame the relay writes (StreamError.Framed).
	framed bool
}

type walk struct {
	rc       *fasthttp.RequestCtx
	call     *Call
	deadline time.Time
	obs      Observer
	clk      *clock
	start    time.Time
	// now is the latest clock reading: the walk's start, then after each
	// upstream call and after anything else that may block (a limiter
	// wait, a backoff sleep, a stream's first event or error body). The
	// deadline, park and breaker checks and an attempt's start use it
	// (stale by microseconds at most), so a plain request costs two clock
	// reads of its own.
	now  time.Time
	res  Result
	last outcome
	// minPark is the shortest remaining park among the members skipped as
	// parked or parked by this walk; -1 = none.
	minPark time.Duration
	// quotaWait is the soonest a member skipped for its quota has room;
	// -1 while none will (none skipped, or each too small for the request).
	quotaWait time.Duration
	// pending is true while an attempt holds a breaker ticket it has not
	// reported yet (see attempt).
	pending bool
	// guard watches the client from the first limiter wait or upstream call
	// on (see callGuard); nil before. A committed stream takes it over.
	guard *callGuard
}

// watch returns the walk's callGuard, starting it on first use.
func (w *walk) watch() *callGuard {
	if w.guard == nil {
		w.guard = acquireGuard(w.rc.Conn())
	}
	return w.guard
}

// clientGone reports whether the walk's client was found gone.
func (w *walk) clientGone() bool { return w.guard != nil && w.guard.Gone() }

// releaseGuard ends the client watch unless a committed stream took it.
func (w *walk) releaseGuard() {
	if w.guard != nil {
		w.guard.release()
		w.guard = nil
	}
}

func walkWith(rc *fasthttp.RequestCtx, call *Call, chain []*Target, deadline time.Time, obs Observer, clk *clock) Result {
	if obs == nil {
		obs = NopObserver{}
	}
	// Read here, not taken from rc.Time(): the request body may have
	// streamed in for seconds since then, and park, breaker and attempt
	// deadlines need the present.
	now := clk.now()
	w := &walk{rc: rc, call: call, deadline: deadline, obs: obs, clk: clk, start: now, now: now, minPark: -1, quotaWait: -1}
	defer w.releaseGuard()
	defer call.ReleaseTranslation()
	w.last.class = ClassCircuitOpen // an empty chain answers 503, like all-open
	for i, t := range chain {
		if i > 0 {
			w.res.Failovers++
			obs.Failover(chain[i-1], w.last.class)
		}
		w.res.Target = t
		if w.member(t) {
			w.res.End = w.now
			return w.res
		}
		if !w.last.class.Failover() || !w.now.Before(deadline) || w.clientGone() {
			break // a client error, the request deadline passed, or the client left
		}
	}
	w.fail()
	w.res.End = w.now
	return w.res
}

// member walks one chain member. It returns true when the walk is over and
// the answer written (a success or a committed stream); false when
// w.last holds the member's failure.
func (w *walk) member(t *Target) bool {
	if f := w.call.Fence; f != nil && !f.Admits(t.Index) {
		return w.fenced(t) // the residency guard: never called
	}
	// The member's adapter for this surface and model: native, translated
	// or, for count_tokens, the gateway's own estimate (provider.Pick, as
	// explain shows it).
	model := t.UpstreamModel(w.call.Model)
	ad, _ := provider.Pick(t.Adapter, &t.Endpoint, w.call.Surface, w.call.CountTokens, model)
	if la, ok := ad.(provider.LocalAnswerer); ok {
		w.answerLocally(t, la)
		return true
	}
	now := w.now
	if !now.Before(w.deadline) {
		w.last = outcome{class: ClassTimeout}
		return false
	}
	if p := t.Park(); p.Parked(now) {
		w.obs.Skip(t, ClassParked)
		if r := p.Remaining(now); w.minPark < 0 || r < w.minPark {
			w.minPark = r
		}
		w.last = outcome{class: ClassParked}
		return false
	}
	if q := w.call.Quota; q != nil {
		if wait, ok := q.Enter(t.Name); !ok {
			w.obs.Skip(t, ClassQuota)
			if wait >= 0 && (w.quotaWait < 0 || wait < w.quotaWait) {
				w.quotaWait = wait // the soonest any skipped member has room
			}
			w.last = outcome{class: ClassQuota}
			return false
		}
	}
	br := t.Breaker()
	ticket, ok := br.Allow(now)
	if !ok {
		w.obs.Skip(t, ClassCircuitOpen)
		w.last = outcome{class: ClassCircuitOpen}
		return false
	}
	lim := t.Limiter()
	if !lim.TryAcquire() {
		// No free slot: queue. The wait (if any) moves the clock on; the
		// client leaving ends it.
		ok, class := lim.Acquire(w.deadline, w.watch().cancel)
		w.now = w.clk.now()
		if !ok {
			// No call was made, so the breaker hears a neutral outcome
			// whatever the limiter's reason: a wait cut short by the
			// request deadline (ClassTimeout) is not the target's failure
			// and must not count towards opening its circuit. Done only
			// frees a half-open probe slot.
			br.Done(ticket, ClassSaturated, now)
			if class == ClassSaturated || class == ClassCanceled {
				w.obs.Skip(t, class)
			}
			w.last = outcome{class: class}
			return false
		}
	}
	// The slot is held across this member's retries and backoffs, and
	// released on every way out of here, a panic included, unless a
	// committed stream took it over (its writer releases it).
	held := true
	defer func() {
		if held {
			lim.Release()
		}
	}()
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			if ticket, ok = br.Allow(w.now); !ok {
				break // opened by our own failures: keep the last failure
			}
		}
		o, committed := w.attempt(t, ad, model, ticket)
		if committed {
			held = false // the stream writer releases the slot
			return true
		}
		if o.class == ClassOK {
			return true
		}
		w.last = o
		if o.class == ClassRateLimited {
			d := ParkDuration(o.retryAfter, w.now)
			t.Park().ParkUntil(w.now.Add(d))
			// A later member found parked answers with the soonest time
			// any candidate is back, this one included.
			if w.minPark < 0 || d < w.minPark {
				w.minPark = d
			}
			break
		}
		if attempt >= t.Retry.Attempts || !w.retryable(t, o) || w.clientGone() {
			break
		}
		backoff := w.clk.jitter(t.Retry.InitialBackoff << min(attempt-1, 20))
		if d, ok := ParseRetryAfter(o.retryAfter, w.now); ok {
			backoff = min(d, MaxRetryAfterBackoff)
		}
		if !w.now.Add(backoff).Before(w.deadline) {
			break // the request deadline comes first: no point sleeping
		}
		w.clk.sleep(backoff)
		w.now = w.clk.now()
	}
	return false
}

// retryable reports whether o may be retried on the same member.
func (w *walk) retryable(t *Target, o outcome) bool {
	switch o.class {
	case ClassTransport:
		return true
	case ClassTimeout:
		// An attempt timeout retries; a request timeout cannot.
		return w.now.Before(w.deadline)
	case ClassServer:
		return t.Retry.RetryableStatus(o.status)
	}
	// 429 parks and moves on; context-length and other 4xx are
	// deterministic: asking again gives the same answer.
	return false
}

// Header names in fasthttp's canonical form (each word capitalized), so
// SetCanonical can store them without normalizing the name per request.
var (
	headerRequestID      = []byte("X-Request-Id")
	headerAcceptEncoding = []byte("Accept-Encoding")
	identityCoding       = []byte("identity")
	headerTarget         = []byte(HeaderTarget)
	headerProvider       = []byte(HeaderProvider)
	headerModel          = []byte(HeaderModel)
	headerAttempts       = []byte(HeaderAttempts)
)

// attempt makes one upstream call through ad with model, the id sent
// upstream. For a success it writes the answer (committed reports a stream
// handed to the stream writer, which then owns the slot and the ticket);
// otherwise it reports the breaker outcome and returns the failure.
func (w *walk) attempt(t *Target, ad Adapter, model []byte, ticket Ticket) (o outcome, committed bool) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	w.pending = true
	defer func() {
		if !committed {
			fasthttp.ReleaseResponse(resp)
		}
		if w.pending {
			// Only a panic (an adapter bug) leaves here with the ticket
			// unreported. Hand it back as neutral: a half-open probe slot
			// held forever would keep the target out of every chain.
			w.pending = false
			t.Breaker().Done(ticket, ClassCanceled, w.clk.now())
		}
	}()
	if err := ad.BuildRequest(req, &t.Endpoint, w.call, model); err != nil {
		fasthttp.ReleaseRequest(req)
		if err == ErrNoToken {
			// No access token: a transport failure of this target.
			t0 := w.now
			w.now = w.clk.now() // the first fetch may have been waited for
			o = outcome{class: ClassTransport}
			w.done(t, ticket, o, t0)
			return o, false
		}
		// Not an upstream call: the request cannot be expressed for this
		// provider. A client error, neutral for the breaker. A translation
		// that refuses the body says its status and code.
		w.pending = false
		t.Breaker().Done(ticket, ClassClient, w.clk.now())
		status, code := fasthttp.StatusBadRequest, CodeInvalidRequest
		var te *translate.Error
		if errors.As(err, &te) {
			if te.Status >= 400 && te.Status <= 499 {
				status = te.Status
			}
			if te.Code != "" {
				code = te.Code
			}
		}
		return outcome{class: ClassClient, status: status,
			envelope: AppendSurfaceError(nil, w.call.Surface, status, err.Error(), TypeInvalidRequest, code)}, false
	}
	// Only the request id and the W3C trace context pass from the client;
	// BuildRequest set everything else, so the client's Authorization,
	// X-Gateway-Metadata and hop-by-hop headers never reach the upstream.
	if id := w.call.RequestID; len(id) > 0 {
		req.Header.SetCanonical(headerRequestID, id)
	} else if id := w.rc.Response.Header.PeekBytes(headerRequestID); len(id) > 0 {
		req.Header.SetCanonical(headerRequestID, id)
	} else if id := w.rc.Request.Header.PeekBytes(headerRequestID); len(id) > 0 {
		req.Header.SetCanonical(headerRequestID, id)
	}
	// Set after BuildRequest, so outside a SigV4 signature (whose signed
	// headers bedrock.sign fixes): AWS accepts unsigned extra headers.
	if c := w.call; c.TraceParent != nil {
		req.Header.SetCanonical(headerTraceparent, c.TraceParent)
		if c.TraceState != nil {
			req.Header.SetCanonical(headerTracestate, c.TraceState)
		}
	}
	// A request without Accept-Encoding accepts any coding (RFC 9110
	// §12.5.3), and a CDN in front of a provider may then gzip the answer:
	// the walk relays bodies and SSE as plain bytes, so it asks for none.
	// Set after BuildRequest and not signed: SigV4 allows unsigned headers.
	req.Header.SetCanonical(headerAcceptEncoding, identityCoding)
	if w.call.Stream {
		resp.StreamBody = true
	}
	// w.now is fresh: nothing since it was read (the walk's start, the end
	// of the previous attempt, a limiter wait or a backoff sleep) waited.
	t0 := w.now
	attemptDeadline := t0.Add(t.Timeout)
	if w.deadline.Before(attemptDeadline) {
		attemptDeadline = w.deadline
	}
	g := w.watch()
	g.deadline, g.begun = attemptDeadline, t0
	req.SetUserValue(guardKey, g)
	w.res.Attempts++
	err := t.client().Do(req, resp) // bounded by g.deadline (roundTripGuarded)
	w.now = w.clk.now()
	fasthttp.ReleaseRequest(req) // written: the body is not needed any more
	// A streamed answer's connection stays bound to g (the transport bound
	// it before the request went out): the client leaving cuts the first
	// event's wait and the relay. Every way out closes it with closeStream.
	if g.Gone() {
		// The client left during the call (its connection was closed) or
		// before it: nobody reads the answer. Neutral for the breaker, no
		// retry, no failover.
		if err == nil && w.call.Stream {
			g.closeStream(resp)
		}
		o = outcome{class: ClassCanceled}
		w.done(t, ticket, o, t0)
		return o, false
	}
	if err != nil {
		o = outcome{class: errClass(err)}
		w.done(t, ticket, o, t0)
		return o, false
	}
	status := resp.StatusCode()
	if status < 200 || status > 299 {
		body := errorBody(resp, g.body(resp))
		class, env := ad.ClassifyError(status, &resp.Header, body)
		o = outcome{class: class, status: status}
		if class == ClassClient || class == ClassContextLength {
			o.envelope = t.redact(append([]byte(nil), env...))
		}
		if ra := resp.Header.Peek(fasthttp.HeaderRetryAfter); len(ra) > 0 {
			o.retryAfter = t.redact(append([]byte(nil), ra...))
		}
		if w.call.Stream {
			g.closeStream(resp) // pooled if the error body was read whole
			// A streamed answer's error body is read after DoDeadline
			// returned the headers, for up to the attempt deadline.
			w.now = w.clk.now()
			if g.Gone() {
				o = outcome{class: ClassCanceled}
			}
		}
		w.done(t, ticket, o, t0)
		return o, false
	}
	if w.call.Stream {
		if encodedStream(resp) {
			g.closeStream(resp) // unread: discards the connection
			o = outcome{class: ClassTransport}
			w.done(t, ticket, o, t0)
			return o, false
		}
		return w.stream(t, ad, ticket, resp, t0)
	}
	w.res.TTFB = w.now.Sub(w.start)
	src, err := decodedBody(resp)
	if err != nil {
		// A coding we cannot undo (or a corrupt body): a protocol failure.
		o = outcome{class: ClassTransport}
		w.done(t, ticket, o, t0)
		return o, false
	}
	// Translate into the client response's pooled body buffer: a fresh
	// response has none yet, and Body() alone would hand nil to the
	// adapter, so every answer would be copied into a new allocation.
	// (Swapping the two responses' body buffers instead of copying a
	// pass-through answer was tried: fasthttp's bytebufferpool then
	// allocated ~2.7 times per request under load; see bench/HISTORY.md.)
	w.rc.Response.AppendBody(nil)
	out, err := ad.TranslateResponse(w.rc.Response.Body()[:0], src, w.call)
	if err != nil {
		// A 2xx the adapter cannot read: the upstream broke the protocol.
		o = outcome{class: ClassTransport}
		w.done(t, ticket, o, t0)
		return o, false
	}
	w.done(t, ticket, outcome{class: ClassOK, status: status}, t0)
	// The usage counted is read from the provider's own answer, in its own
	// names (docs/quotas.md, Cached tokens): the client's shape may have
	// no field for a part of it (cache writes, on chat translated from
	// Anthropic). The translated answer reports the same numbers.
	w.res.Usage, _ = provider.AnswerUsage(ad, src)
	w.rc.Response.SwapBody(t.redact(out))
	w.rc.SetStatusCode(status)
	w.rc.SetContentType("application/json")
	w.res.Status, w.res.Class = status, ClassOK
	w.headers(t)
	w.droppedTools(ad)
	return outcome{class: ClassOK, status: status}, false
}

// headerDroppedTools names the client's tools a translated member left out
// (provider.ToolDropper).
var headerDroppedTools = []byte("X-Gateway-Dropped-Tools")

// droppedTools sets X-Gateway-Dropped-Tools on a success of ad, when ad
// dropped some of the client's tools from the request it sent.
func (w *walk) droppedTools(ad Adapter) {
	if td, ok := ad.(provider.ToolDropper); ok {
		if v := td.DroppedTools(w.call); len(v) > 0 {
			w.rc.Response.Header.SetCanonical(headerDroppedTools, v)
		}
	}
}

// answerLocally lets la answer for member t, with no upstream call: no
// attempt is counted, nothing is billed (the usage is a known zero), and
// the X-Gateway-* headers name t as for any answer.
func (w *walk) answerLocally(t *Target, la provider.LocalAnswerer) {
	la.AnswerLocally(&w.rc.Response, w.call)
	w.res.Status, w.res.Class = w.rc.Response.StatusCode(), ClassOK
	w.res.Usage = Usage{HasPrompt: true, HasCompletion: true}
	w.headers(t)
}

// done reports an attempt's outcome to the breaker and the observer; w.now
// is the time the attempt ended.
func (w *walk) done(t *Target, ticket Ticket, o outcome, t0 time.Time) {
	w.pending = false
	t.Breaker().Done(ticket, o.class, w.now)
	w.obs.Attempt(t, o.class, o.status, w.now.Sub(t0))
}

// maxErrorBody caps how much of an error answer is read.
const maxErrorBody = 1 << 20

// errorBody returns the body of a non-2xx answer as plain bytes (at most
// maxErrorBody bytes when streamed, read from s; s is nil for a buffered
// answer), or nil when it is content-coded and cannot be decoded (a
// streamed one never is): the class then comes from the status alone, and
// no encoded byte is relayed.
func errorBody(resp *fasthttp.Response, s io.Reader) []byte {
	if s == nil {
		b, err := decodedBody(resp)
		if err != nil {
			return nil
		}
		return b
	}
	if encodedStream(resp) {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(s, maxErrorBody))
	return b
}

// errClass classifies a client error from fasthttp.
func errClass(err error) Class {
	if errors.Is(err, fasthttp.ErrDialTimeout) {
		return ClassTransport // connect failure: 502, not 504
	}
	var te interface{ Timeout() bool }
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &te) && te.Timeout()) {
		return ClassTimeout
	}
	return ClassTransport
}

// headers sets the X-Gateway-* response headers for the last member.
func (w *walk) headers(t *Target) {
	h := &w.rc.Response.Header
	h.SetCanonical(headerTarget, byteconv.Bytes(t.Name))
	h.SetCanonical(headerProvider, byteconv.Bytes(t.Provider))
	setModelHeader(h, t.UpstreamModel(w.call.Model))
	var buf [20]byte
	h.SetCanonical(headerAttempts, strconv.AppendInt(buf[:0], int64(w.res.Attempts), 10))
}

// setModelHeader sets X-Gateway-Model to model. The id comes from the
// client's body (unless model_map replaced it) and JSON escapes can put any
// byte in it; a control byte in a header value makes strict HTTP clients
// (Go's net/http, Python's h11) refuse the whole response, so each is
// replaced by '?'. fasthttp already turns CR and LF into spaces. The usual
// id has none and costs one scan.
func setModelHeader(h *fasthttp.ResponseHeader, model []byte) {
	for i, c := range model {
		if (c < 0x20 && c != '\t') || c == 0x7f {
			clean := append([]byte(nil), model...)
			for j := i; j < len(clean); j++ {
				if c := clean[j]; (c < 0x20 && c != '\t') || c == 0x7f {
					clean[j] = '?'
				}
			}
			h.SetCanonical(headerModel, clean)
			return
		}
	}
	h.SetCanonical(headerModel, model)
}

// fail writes the final error of a walk that found no answer (docs/api.md, Errors), in
// the envelope of the call's surface.
func (w *walk) fail() {
	o := w.last
	rc := w.rc
	status := fasthttp.StatusBadGateway
	var body []byte
	gateway := func(msg, typ, code string) []byte {
		return AppendSurfaceError(nil, w.call.Surface, status, msg, typ, code)
	}
	switch o.class {
	case ClassCircuitOpen:
		status = fasthttp.StatusServiceUnavailable
		msg := "no upstream available: every candidate's circuit is open"
		if w.res.Attempts > 0 {
			// An earlier member was called and failed; only the rest were
			// skipped. Do not tell the client every circuit is open.
			msg = "no upstream available: the candidates left after a failure have open circuits"
		}
		body = gateway(msg, TypeUpstream, CodeUpstreamUnavailable)
	case ClassSaturated:
		status = fasthttp.StatusTooManyRequests
		rc.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
		body = gateway("upstream saturated: concurrency queue full", TypeRateLimit, CodeProviderSaturated)
	case ClassRateLimited, ClassParked:
		status = fasthttp.StatusTooManyRequests
		switch {
		case len(o.retryAfter) > 0:
			rc.Response.Header.SetBytesV(fasthttp.HeaderRetryAfter, o.retryAfter)
		case o.class == ClassParked && w.minPark >= 0:
			secs := int64((w.minPark + time.Second - 1) / time.Second)
			rc.Response.Header.SetBytesV(fasthttp.HeaderRetryAfter, strconv.AppendInt(nil, max(secs, 1), 10))
		default:
			rc.Response.Header.SetBytesV(fasthttp.HeaderRetryAfter, strconv.AppendInt(nil, int64(DefaultPark/time.Second), 10))
		}
		body = gateway("upstream rate limit exceeded", TypeRateLimit, CodeRateLimitExceeded)
	case ClassClient, ClassContextLength:
		status = o.status
		body = o.envelope
		// Guards against an adapter that reports no usable status or no
		// envelope: status 0 would go out as a 200 with an error body.
		if status < 400 || status > 499 {
			status = fasthttp.StatusBadRequest
		}
		if len(body) == 0 {
			body = gateway("upstream refused the request", TypeInvalidRequest, CodeInvalidRequest)
		}
	case ClassQuota:
		status = fasthttp.StatusTooManyRequests
		if w.quotaWait < 0 {
			// Each candidate's own token limit is smaller than the request:
			// no wait would let it through.
			body = gateway("the request is larger than the token limit of every candidate target", TypeRateLimit, CodeTargetQuota)
			break
		}
		secs := int64((w.quotaWait + time.Second - 1) / time.Second)
		rc.Response.Header.SetBytesV(fasthttp.HeaderRetryAfter, strconv.AppendInt(nil, max(secs, 1), 10))
		body = gateway("every candidate target is out of its own quota", TypeRateLimit, CodeTargetQuota)
	case ClassAuth:
		body = gateway("upstream rejected the gateway's credentials", TypeUpstream, CodeUpstreamAuth)
	case ClassTimeout:
		status = fasthttp.StatusGatewayTimeout
		body = gateway("upstream timed out", TypeUpstream, CodeGatewayTimeout)
	case ClassCanceled:
		status = statusClientClosed
		body = gateway("client closed the request", TypeInvalidRequest, CodeInvalidRequest)
	default: // ClassServer, ClassTransport
		body = gateway("upstream failed", TypeUpstream, CodeUpstreamError)
	}
	rc.SetStatusCode(status)
	rc.SetContentType("application/json")
	rc.SetBody(body)
	w.res.Status, w.res.Class = status, o.class
	if w.res.Target != nil {
		w.headers(w.res.Target)
	}
}

// statusClientClosed is logged for a client that went away (nginx's 499);
// nobody receives it.
const statusClientClosed = 499
