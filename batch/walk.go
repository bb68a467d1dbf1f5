package batch

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/upstream"
)

// The walk of a batch call: an upload or a message batch tries the members
// of its chain in order, as a request's walk does, moving on after a
// failover-safe failure and sending the whole body again; a call naming an
// id has one member, the id's target. A member outside the caller's
// residency is never called (the run-time fence), and a member whose
// circuit is open is passed over. Batch calls do not feed a member's
// breaker, park or concurrency limiter: those guard the interactive
// traffic, and a provider's Files or Batches API failing, or throttling
// its batch queue, says little of its chat endpoint (docs/batches.md).

// minTransferRate is the slowest an upload is assumed to move: an
// attempt's deadline is the target's timeout plus its body's size at this
// rate.
const minTransferRate = 1 << 20 // bytes per second

// maxErrorBody caps what is read of a non-2xx answer.
const maxErrorBody = 1 << 20

// exchange describes the upstream call a walk makes at each member.
type exchange struct {
	method string
	// path returns the call's path under member t's base URL, query
	// included.
	path func(t *upstream.Target) string
	// body, when set, gives req its body for member t (called per
	// attempt: a stream is read from its start each time) and returns its
	// size (for the attempt's deadline).
	body func(t *upstream.Target, req *fasthttp.Request) (int64, error)
	// stream leaves a 2xx answer's body unread (resp.StreamBody).
	stream bool
	// client is the client header a provider may read (anthropic-version,
	// anthropic-beta); nil = none.
	client *fasthttp.RequestHeader
}

// failure is a walk's last failure, until it is answered.
type failure struct {
	class      upstream.Class
	status     int
	envelope   []byte // the client's error body (owned), for client errors
	retryAfter []byte // the upstream's Retry-After (owned)
	fenced     bool
}

// walk calls x at members in order until one answers 2xx, and returns
// that member with its answer in resp; the caller releases resp's body
// stream when x.stream. When none does it answers the last failure (in the
// call's envelope) and returns nil.
func (c *call) walk(members []*upstream.Target, x *exchange, resp *fasthttp.Response) *upstream.Target {
	obs := c.observer()
	last := failure{class: upstream.ClassCircuitOpen}
	for i, t := range members {
		if i > 0 {
			obs.Failover(members[i-1], last.class)
		}
		if !c.caller.Admits(t) {
			// The residency guard: by construction never (the load-time
			// proof), answered 500 and reported when it is.
			c.reached(t, upstream.ClassClient, true)
			if g := c.s.Gateway; g != nil && g.Fenced != nil {
				g.Fenced(c.caller.Key(), t.Name)
			}
			last = failure{fenced: true}
			break
		}
		if t.Breaker().State(c.s.clock()) == upstream.BreakerOpen {
			c.reached(t, upstream.ClassCircuitOpen, false)
			obs.Skip(t, upstream.ClassCircuitOpen)
			last = failure{class: upstream.ClassCircuitOpen}
			continue
		}
		f, ok := c.member(t, x, resp)
		if ok {
			return t
		}
		last = f
		if !f.class.Failover() {
			break
		}
	}
	c.answerFailure(last)
	return nil
}

// member makes up to t's retry.attempts calls of x to t.
func (c *call) member(t *upstream.Target, x *exchange, resp *fasthttp.Response) (failure, bool) {
	obs := c.observer()
	var f failure
	for attempt := 1; ; attempt++ {
		resp.Reset()
		if x.stream {
			resp.StreamBody = true
		}
		req := fasthttp.AcquireRequest()
		req.Header.SetMethod(x.method)
		if tp, ts := c.caller.TraceContext(); tp != nil {
			req.Header.SetBytesV("traceparent", tp)
			if ts != nil {
				req.Header.SetBytesV("tracestate", ts)
			}
		}
		if id := c.rc.Response.Header.Peek("X-Request-Id"); len(id) > 0 {
			req.Header.SetBytesV("X-Request-Id", id)
		}
		var size int64
		var err error
		if x.body != nil {
			size, err = x.body(t, req)
		}
		t0 := c.s.clock()
		deadline := t0.Add(t.Timeout + time.Duration(size/minTransferRate)*time.Second)
		if err == nil {
			c.attempts++
			err = t.Transfer(req, resp, x.path(t), x.client, deadline)
		}
		fasthttp.ReleaseRequest(req)
		took := c.s.clock().Sub(t0)
		switch {
		case err != nil:
			f = failure{class: errClass(err)}
			obs.Attempt(t, f.class, 0, took)
		case resp.StatusCode() >= 200 && resp.StatusCode() <= 299:
			c.reached(t, upstream.ClassOK, false)
			obs.Attempt(t, upstream.ClassOK, resp.StatusCode(), took)
			return failure{}, true
		default:
			status := resp.StatusCode()
			body := errorBody(resp)
			class, env := provider.ClassifyBatchError(t.Provider, status, &resp.Header, body)
			f = failure{class: class, status: status}
			if class == upstream.ClassClient || class == upstream.ClassContextLength {
				f.class = upstream.ClassClient
				f.envelope = t.Redact(append([]byte(nil), env...))
			}
			if ra := resp.Header.Peek(fasthttp.HeaderRetryAfter); len(ra) > 0 {
				f.retryAfter = t.Redact(append([]byte(nil), ra...))
			}
			if x.stream {
				resp.CloseBodyStream() //nolint:errcheck // a failed answer's stream
			}
			obs.Attempt(t, f.class, status, took)
		}
		c.reached(t, f.class, false)
		if attempt >= t.Retry.Attempts || !retryable(t, f) {
			return f, false
		}
		backoff := time.Duration(0)
		if d := t.Retry.InitialBackoff << min(attempt-1, 20); d > 0 {
			backoff = time.Duration(rand.Int64N(int64(d)))
		}
		if d, ok := upstream.ParseRetryAfter(f.retryAfter, c.s.clock()); ok {
			backoff = min(d, upstream.MaxRetryAfterBackoff)
		}
		time.Sleep(backoff)
	}
}

// retryable reports whether f may be retried on t.
func retryable(t *upstream.Target, f failure) bool {
	switch f.class {
	case upstream.ClassTransport, upstream.ClassTimeout:
		return true
	case upstream.ClassServer:
		return t.Retry.RetryableStatus(f.status)
	}
	return false
}

// errClass classifies a transport error.
func errClass(err error) upstream.Class {
	var te interface{ Timeout() bool }
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &te) && te.Timeout()) && !errors.Is(err, fasthttp.ErrDialTimeout) {
		return upstream.ClassTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && !errors.Is(err, fasthttp.ErrDialTimeout) {
		return upstream.ClassTimeout
	}
	return upstream.ClassTransport
}

// errorBody reads a non-2xx answer's body, at most maxErrorBody bytes.
func errorBody(resp *fasthttp.Response) []byte {
	if s := resp.BodyStream(); s != nil {
		b, _ := io.ReadAll(io.LimitReader(s, maxErrorBody))
		return b
	}
	return resp.Body()
}

// answerFailure answers a walk that found no answer, as the request walk
// does (docs/api.md, Errors).
func (c *call) answerFailure(f failure) {
	h := &c.rc.Response.Header
	c.class = f.class
	switch {
	case f.fenced:
		c.fail(fasthttp.StatusInternalServerError,
			"internal gateway error: the call would reach a target outside its client key's residency",
			upstream.TypeServer, upstream.CodeInternalError)
	case f.class == upstream.ClassCircuitOpen:
		c.fail(fasthttp.StatusServiceUnavailable, "no upstream available: every candidate's circuit is open",
			upstream.TypeUpstream, upstream.CodeUpstreamUnavailable)
	case f.class == upstream.ClassRateLimited:
		if len(f.retryAfter) > 0 {
			h.SetBytesV(fasthttp.HeaderRetryAfter, f.retryAfter)
		} else {
			h.Set(fasthttp.HeaderRetryAfter, strconv.Itoa(int(upstream.DefaultPark/time.Second)))
		}
		c.fail(fasthttp.StatusTooManyRequests, "upstream rate limit exceeded", upstream.TypeRateLimit, upstream.CodeRateLimitExceeded)
	case f.class == upstream.ClassClient:
		status := f.status
		if status < 400 || status > 499 {
			status = fasthttp.StatusBadRequest
		}
		c.rc.SetStatusCode(status)
		c.rc.SetContentType("application/json")
		c.rc.SetBody(f.envelope)
	case f.class == upstream.ClassAuth:
		c.fail(fasthttp.StatusBadGateway, "upstream rejected the gateway's credentials", upstream.TypeUpstream, upstream.CodeUpstreamAuth)
	case f.class == upstream.ClassTimeout:
		c.fail(fasthttp.StatusGatewayTimeout, "upstream timed out", upstream.TypeUpstream, upstream.CodeGatewayTimeout)
	default:
		c.fail(fasthttp.StatusBadGateway, "upstream failed", upstream.TypeUpstream, upstream.CodeUpstreamError)
	}
	c.class = f.class
}

// observer is the Gateway's walk observer (metrics), or one that does
// nothing.
func (c *call) observer() upstream.Observer {
	if g := c.s.Gateway; g != nil && g.Observer != nil {
		return g.Observer
	}
	return upstream.NopObserver{}
}

// classify classifies t's non-2xx answer in resp.
func classify(t *upstream.Target, resp *fasthttp.Response) (upstream.Class, []byte) {
	return provider.ClassifyBatchError(t.Provider, resp.StatusCode(), &resp.Header, errorBody(resp))
}
