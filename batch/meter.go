package batch

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// Metering a message batch (docs/batches.md, Quotas): Anthropic's batch
// object reports no usage, its results do. When the gateway first sees a
// message batch ended (its object read, listed or cancelled, or its
// results asked for), it reads the results from the target itself, once,
// off the request path, adds up their usage and charges it (the record's
// once-only mark, so replicas charge it once). A client's own download
// only relays: what it reads, and whether it reads to the end, changes
// nothing of the charge.

// Metering bounds.
const (
	// meterWorkers is how many results reads a process runs at once.
	meterWorkers = 2
	// meterQueue is how many ended batches may wait for a worker; one
	// seen when it is full is metered when it is next seen.
	meterQueue = 256
	// meterRetry is how long after a read began the same batch is not
	// read again by this process (a failed read is retried then, when
	// the batch is next seen).
	meterRetry = time.Minute
	// meterMaxTime bounds one read of a batch's results, however steadily
	// the target sends them.
	meterMaxTime = 30 * time.Minute
)

// meter is a Server's metering of message batches. Safe for concurrent
// use; the zero value is ready.
type meter struct {
	once sync.Once
	jobs chan meterJob
	mu   sync.Mutex
	// began is when this process last began reading each batch's results
	// ("key\x00id"), for meterRetry.
	began map[string]time.Time
	// busy counts the jobs queued or running (Server.WaitMetered).
	busy sync.WaitGroup
}

// meterJob is one message batch to meter: o, the caller's record, held by
// t; seen is when the gateway saw it end (the charge's window).
type meterJob struct {
	t    *upstream.Target
	o    tenancy.Object
	st   *hotpath.State
	seen time.Time
}

// meterResults queues the metering of the caller's ended message batch o
// on t, unless its usage is charged already or this process began reading
// its results less than meterRetry ago.
func (c *call) meterResults(t *upstream.Target, o tenancy.Object) {
	if o.Charged || o.Kind != tenancy.KindMessageBatch {
		return
	}
	s := c.s
	m := &s.meter
	now := s.clock()
	name := o.Key + "\x00" + o.ID
	m.mu.Lock()
	if at, ok := m.began[name]; ok && now.Sub(at) < meterRetry {
		m.mu.Unlock()
		return
	}
	if m.began == nil || len(m.began) >= 4*meterQueue {
		m.forget(now)
	}
	m.began[name] = now
	m.mu.Unlock()
	m.once.Do(func() {
		m.jobs = make(chan meterJob, meterQueue)
		for range meterWorkers {
			go s.meterWorker()
		}
	})
	m.busy.Add(1)
	select {
	case m.jobs <- meterJob{t: t, o: o, st: c.st, seen: now}:
	default:
		m.busy.Done()
		m.mu.Lock()
		delete(m.began, name)
		m.mu.Unlock()
	}
}

// forget drops the marks older than meterRetry (m.mu held).
func (m *meter) forget(now time.Time) {
	if m.began == nil {
		m.began = map[string]time.Time{}
		return
	}
	for k, at := range m.began {
		if now.Sub(at) >= meterRetry {
			delete(m.began, k)
		}
	}
}

// WaitMetered waits until every message batch queued for metering has
// been read and charged (or failed): for tests, and before a shutdown.
func (s *Server) WaitMetered() { s.meter.busy.Wait() }

func (s *Server) meterWorker() {
	for j := range s.meter.jobs {
		if err := s.meterOne(j); err != nil {
			s.Log.Warn().Err(err).Str("target", j.t.Name).Str("id", j.o.ID).
				Msg("batch: could not read a message batch's results to meter them; retried when it is next seen")
		}
		s.meter.busy.Done()
	}
}

// errResultsGone is meterOne's error when the target no longer has the
// results: nothing is charged, and nothing will ever be.
var errResultsGone = errors.New("the target no longer has the results; the batch's usage is not charged")

// meterOne reads the results of job j's batch from its target and charges
// their usage, once.
func (s *Server) meterOne(j meterJob) error {
	t, o := j.t, j.o
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodGet)
	resp.StreamBody = true
	start := time.Now()
	if err := t.Transfer(req, resp, objectPath(kindMessages, o.ID, "/results"), nil, start.Add(t.Timeout)); err != nil {
		return err
	}
	defer resp.CloseBodyStream() //nolint:errcheck // read or abandoned
	switch st := resp.StatusCode(); {
	case st == fasthttp.StatusNotFound:
		// The provider no longer has the results (they outlived their
		// retention before the batch was seen ended): nothing will ever
		// be read, so nothing is charged, and the read is not retried.
		ctx, cancel := s.storeCtx()
		defer cancel()
		_, err := s.Store.Flag(ctx, o.Key, o.Kind, o.ID, tenancy.FlagCharged)
		return errors.Join(errResultsGone, err)
	case st < 200 || st > 299:
		return errors.New("the target answered " + strconv.Itoa(st))
	}
	var u resultUsage
	r := upstream.BodyReader(resp, t.Timeout)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		u.feed(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if time.Since(start) > meterMaxTime {
			return errors.New("the results took over " + meterMaxTime.String() + " to read")
		}
	}
	u.end()
	// The store call's bound starts now: the read may have taken minutes.
	ctx, cancel := s.storeCtx()
	defer cancel()
	first, err := s.Store.Flag(ctx, o.Key, o.Kind, o.ID, tenancy.FlagCharged)
	if err != nil || !first || !u.sum.Known {
		return err
	}
	st := j.st
	if s.Gateway != nil {
		if cur := s.Gateway.Load(); cur != nil {
			st = cur // the plan now, whose counters a reload kept
		}
	}
	if p := st.Quota; p != nil {
		p.BatchSettle(o.Key, t.Name, quota.BatchHold{}, &u.sum, spendOf(p, t, o.Models, &u.sum), j.seen)
	}
	return nil
}

// maxResultLine is the longest results line whose usage is read; a longer
// one is skipped uncounted.
const maxResultLine = 4 << 20

// resultUsage adds up the usage of a message batch's results as they
// pass: one JSON object a line.
type resultUsage struct {
	line []byte
	skip bool // the current line is too long to read
	// sum adds up the succeeded results' usage.
	sum quota.Usage
	p   fastjson.Parser
}

func (u *resultUsage) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			u.add(b)
			return
		}
		u.add(b[:i])
		u.end()
		b = b[i+1:]
	}
}

func (u *resultUsage) add(b []byte) {
	if u.skip {
		return
	}
	if len(u.line)+len(b) > maxResultLine {
		u.skip, u.line = true, u.line[:0]
		return
	}
	u.line = append(u.line, b...)
}

// end reads the line collected so far.
func (u *resultUsage) end() {
	defer func() { u.line, u.skip = u.line[:0], false }()
	if u.skip || len(bytes.TrimSpace(u.line)) == 0 {
		return
	}
	v, err := u.p.ParseBytes(u.line)
	if err != nil || str(v, "result", "type") != "succeeded" {
		return
	}
	us := v.Get("result", "message", "usage")
	if us == nil || us.Type() != fastjson.TypeObject {
		return
	}
	one, ok := usageOf(us)
	if !ok {
		return
	}
	u.sum.Input += one.Input
	u.sum.CacheRead += one.CacheRead
	u.sum.CacheWrite += one.CacheWrite
	u.sum.Output += one.Output
	u.sum.Known = true
}
