package mock

import (
	"math/rand/v2"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/upstream"
)

// Failure kinds for Failure.Kind.
const (
	// KindStatus answers the status with an OpenAI error envelope (429 also
	// with Retry-After when RetryAfter > 0). The default.
	KindStatus = "status"
	// KindSSEError answers a streaming request with 200 and an SSE stream
	// whose event number After is {"error":{...}} (After 0: the first frame),
	// with no [DONE]. Non-streaming requests get KindStatus.
	KindSSEError = "sse_error"
	// KindCut closes the connection: a streaming request after After events
	// (mid-body), any other request before a response byte. The client sees
	// a transport error.
	KindCut = "cut"
)

// Failure describes failures to inject into API requests (admin endpoints
// are never failed).
type Failure struct {
	// Status is the HTTP status of KindStatus (and of the error event of
	// KindSSEError). Default 503.
	Status int
	// Count is the number of requests to fail, then the mock answers
	// normally again. 0 fails every request until Reset.
	Count int
	// Code is the error envelope's code (e.g. "context_length_exceeded").
	// Default null.
	Code string
	// RetryAfter is sent as Retry-After in whole seconds when > 0.
	RetryAfter int
	// Kind is one of KindStatus (default), KindSSEError, KindCut.
	Kind string
	// After is the number of normal stream events before an SSE error event
	// or a cut. Default 0.
	After int
}

type injection struct {
	Failure
	abort bool
}

func (in *injection) message(name string) string {
	return "mock " + name + ": injected failure (status " + strconv.Itoa(in.Status) + ")"
}

// Fail makes the mock fail API requests as f describes, replacing any
// earlier injection. Safe for concurrent use.
func (s *Server) Fail(f Failure) {
	if f.Status == 0 {
		f.Status = 503
	}
	if f.Kind == "" {
		f.Kind = KindStatus
	}
	in := &injection{Failure: f, abort: f.Kind == KindCut}
	s.left.Store(int64(f.Count))
	s.inject.Store(in)
}

// Reset removes any injected failure and restores Options.Latency.
// Counters are kept (see ResetStats).
func (s *Server) Reset() {
	s.inject.Store(nil)
	s.latency.Store(int64(s.opts.Latency))
}

// SetLatency changes the delay of every API response from now on.
func (s *Server) SetLatency(d time.Duration) { s.latency.Store(int64(d)) }

// takeFailure returns the injection to apply to this request, or nil.
func (s *Server) takeFailure() *injection {
	if in := s.inject.Load(); in != nil {
		if in.Count == 0 || s.left.Add(-1) >= 0 {
			return in
		}
	}
	if s.opts.FailRate > 0 && rand.Float64() < s.opts.FailRate {
		return &injection{Failure: Failure{Status: s.opts.FailStatus, Kind: KindStatus}}
	}
	return nil
}

// fail answers the request according to in.
func (s *Server) fail(ctx *fasthttp.RequestCtx, in *injection, surface int, model string, streaming bool) {
	switch {
	case in.Kind == KindCut && !streaming:
		ctx.HijackSetNoResponse(true)
		ctx.Hijack(func(c net.Conn) { _ = c.Close() })
	case (in.Kind == KindCut || in.Kind == KindSSEError) && streaming:
		s.stream(ctx, surface, model, time.Duration(s.latency.Load()), in)
	default:
		s.sleep()
		if in.RetryAfter > 0 {
			ctx.Response.Header.Set("Retry-After", strconv.Itoa(in.RetryAfter))
		}
		ctx.SetStatusCode(in.Status)
		ctx.SetContentType("application/json")
		b := bufPool.Get()
		b.B = appendErrorBody(b.B[:0], in.Status, in.Code, in.message(s.opts.Name))
		ctx.SetBody(b.B)
		bufPool.Put(b)
	}
}

// counters are the mock's request counts.
type counters struct {
	requests     atomic.Int64
	bySurface    [numSurfaces]atomic.Int64
	streams      atomic.Int64
	failed       atomic.Int64
	unauthorized atomic.Int64
	badRequests  atomic.Int64
	notFound     atomic.Int64
}

// Stats is a snapshot of the mock's counters.
type Stats struct {
	// Name is the mock's name.
	Name string `json:"name"`
	// Requests counts API requests on known paths (admin calls excluded).
	Requests int64 `json:"requests"`
	// ByPath counts Requests per API path.
	ByPath map[string]int64 `json:"by_path"`
	// Streams counts streams served normally.
	Streams int64 `json:"streams"`
	// Failed counts injected failures (Fail, FailRate).
	Failed int64 `json:"failed"`
	// Unauthorized counts requests refused for a wrong or missing API key.
	Unauthorized int64 `json:"unauthorized"`
	// BadRequests counts 400s for malformed bodies.
	BadRequests int64 `json:"bad_requests"`
	// NotFound counts requests on unknown paths.
	NotFound int64 `json:"not_found"`
}

// Stats returns the current counters. Safe for concurrent use.
func (s *Server) Stats() Stats {
	st := Stats{
		Name:         s.opts.Name,
		Requests:     s.stats.requests.Load(),
		ByPath:       make(map[string]int64, numSurfaces),
		Streams:      s.stats.streams.Load(),
		Failed:       s.stats.failed.Load(),
		Unauthorized: s.stats.unauthorized.Load(),
		BadRequests:  s.stats.badRequests.Load(),
		NotFound:     s.stats.notFound.Load(),
	}
	for i := range numSurfaces {
		st.ByPath[surfacePaths[i]] = s.stats.bySurface[i].Load()
	}
	return st
}

// ResetStats zeroes the counters.
func (s *Server) ResetStats() {
	s.stats.requests.Store(0)
	for i := range numSurfaces {
		s.stats.bySurface[i].Store(0)
	}
	s.stats.streams.Store(0)
	s.stats.failed.Store(0)
	s.stats.unauthorized.Store(0)
	s.stats.badRequests.Store(0)
	s.stats.notFound.Store(0)
}

func (st *Stats) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"name":`...)
	dst = upstream.AppendJSONString(dst, st.Name)
	dst = append(dst, `,"requests":`...)
	dst = strconv.AppendInt(dst, st.Requests, 10)
	dst = append(dst, `,"by_path":{`...)
	for i, p := range surfacePaths {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = upstream.AppendJSONString(dst, p)
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, st.ByPath[p], 10)
	}
	dst = append(dst, `},"streams":`...)
	dst = strconv.AppendInt(dst, st.Streams, 10)
	dst = append(dst, `,"failed":`...)
	dst = strconv.AppendInt(dst, st.Failed, 10)
	dst = append(dst, `,"unauthorized":`...)
	dst = strconv.AppendInt(dst, st.Unauthorized, 10)
	dst = append(dst, `,"bad_requests":`...)
	dst = strconv.AppendInt(dst, st.BadRequests, 10)
	dst = append(dst, `,"not_found":`...)
	dst = strconv.AppendInt(dst, st.NotFound, 10)
	return append(dst, '}')
}
