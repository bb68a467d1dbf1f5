// Package decisions keeps the routing decisions of the last requests in a
// fixed ring that the hot path fills without a lock or an allocation and
// the operator's console reads (docs/console.md).
//
// A decision holds what routing decided and how the walk ended: never a
// header, a body or a credential. Names (client key, targets) are the
// configuration's own strings, kept by reference; request-supplied bytes
// (model, request id) are copied, truncated to fixed bounds.
package decisions

import (
	"encoding/binary"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// Size is the ring's number of slots: the newest Size decisions are kept.
const Size = 256

// Bounds of the copied fields and of the walked list; longer values are
// truncated (the walked list keeps its first MaxWalked names).
const (
	MaxModelBytes     = 96
	MaxRequestIDBytes = 64
	MaxWalked         = 8
	traceIDBytes      = 32
)

// busy marks a slot a writer is filling.
const busy = 1 << 63

// name is a reference to an immutable configuration string.
type name struct {
	p atomic.Pointer[byte]
	n atomic.Int64
}

func (x *name) store(s string) {
	x.p.Store(unsafe.StringData(s))
	x.n.Store(int64(len(s)))
}

func (x *name) load() string {
	p, n := x.p.Load(), x.n.Load()
	if p == nil || n <= 0 {
		return ""
	}
	return unsafe.String(p, n)
}

// text is a copied byte string of at most 8*W bytes, stored as words.
type text[W [MaxModelBytes / 8]atomic.Uint64 | [MaxRequestIDBytes / 8]atomic.Uint64 | [traceIDBytes / 8]atomic.Uint64] struct {
	n atomic.Int64
	w W
}

// slot is one decision. Every field is an atomic, so a reader racing a
// writer sees torn data only between the seq checks that reject it.
type slot struct {
	// seq is the decision's sequence number (from 1); 0 = never written,
	// busy = being written.
	seq atomic.Uint64
	// lost is the sequence number of the last decision dropped here.
	lost    atomic.Uint64
	at      atomic.Int64 // Unix nanoseconds when the answer ended
	latency atomic.Int64
	// a packs the rule (int32) with the status (16 bits) and attempts
	// (16 bits); b the surface, the class, stream and the walked count.
	a, b      atomic.Uint64
	prompt    atomic.Int64 // -1 = unknown
	complete  atomic.Int64 // -1 = unknown
	key       name
	target    name
	walked    [MaxWalked]name
	model     text[[MaxModelBytes / 8]atomic.Uint64]
	requestID text[[MaxRequestIDBytes / 8]atomic.Uint64]
	traceID   text[[traceIDBytes / 8]atomic.Uint64]
	// api and op name a batch API call (telemetry.BatchCall), objectID
	// its file or batch id; api is "" for any other request.
	api, op  name
	objectID text[[MaxRequestIDBytes / 8]atomic.Uint64]
}

// Ring is the decision ring. The zero value is ready to use; it must not
// be copied. Add is safe for concurrent use with itself and with readers.
type Ring struct {
	head    atomic.Uint64 // the last sequence number handed out
	dropped atomic.Uint64
	slots   [Size]slot
}

// Add records the finished request e (a telemetry.Finished record) as the
// next decision, ended at now. It takes no lock and allocates nothing. In
// the rare case that a slot's previous writer is still writing when the
// ring has come round to it (Size requests ended during one write), the
// decision is dropped and counted (Dropped).
func (r *Ring) Add(e *telemetry.Entry, now time.Time) {
	seq := r.head.Add(1)
	s := &r.slots[seq%Size]
	old := s.seq.Load()
	if old&busy != 0 || old > seq || !s.seq.CompareAndSwap(old, busy) {
		s.lost.Store(seq)
		r.dropped.Add(1)
		return
	}
	s.at.Store(now.UnixNano())
	s.latency.Store(int64(e.Latency))
	attempts := min(e.Attempts, 0xffff)
	s.a.Store(uint64(uint32(int32(e.Rule))) | uint64(uint16(e.Status))<<32 | uint64(attempts)<<48)
	walked := min(len(e.Walked), MaxWalked)
	var stream uint64
	if e.Stream {
		stream = 1
	}
	s.b.Store(uint64(uint8(e.Surface)) | uint64(uint8(e.Class))<<8 | stream<<16 | uint64(walked)<<24 | uint64(min(len(e.Walked), 0xffff))<<32)
	s.prompt.Store(-1)
	s.complete.Store(-1)
	if e.Usage.HasPrompt {
		s.prompt.Store(e.Usage.Prompt)
	}
	if e.Usage.HasCompletion {
		s.complete.Store(e.Usage.Completion)
	}
	s.key.store(e.Key)
	s.target.store(e.Target)
	for i := range walked {
		s.walked[i].store(e.Walked[i])
	}
	storeText(&s.model.n, s.model.w[:], e.Model)
	storeText(&s.requestID.n, s.requestID.w[:], e.RequestID)
	storeText(&s.traceID.n, s.traceID.w[:], e.TraceID)
	s.api.store(e.Batch.API)
	s.op.store(e.Batch.Op)
	storeText(&s.objectID.n, s.objectID.w[:], e.Batch.ID)
	s.seq.Store(seq)
}

// storeText copies b (truncated to the words' capacity) into w.
func storeText(n *atomic.Int64, w []atomic.Uint64, b []byte) {
	b = b[:min(len(b), 8*len(w))]
	n.Store(int64(len(b)))
	for i := 0; i*8 < len(b); i++ {
		var chunk [8]byte
		copy(chunk[:], b[i*8:])
		w[i].Store(binary.LittleEndian.Uint64(chunk[:]))
	}
}

func loadText(n *atomic.Int64, w []atomic.Uint64) string {
	l := int(min(max(n.Load(), 0), int64(8*len(w))))
	buf := make([]byte, (l+7)/8*8)
	for i := 0; i*8 < l; i++ {
		binary.LittleEndian.PutUint64(buf[i*8:], w[i].Load())
	}
	return string(buf[:l])
}

// Head returns the sequence number of the newest decision handed out (it
// may still be being written); 0 before the first.
func (r *Ring) Head() uint64 { return r.head.Load() }

// Dropped returns how many decisions were dropped (see Add).
func (r *Ring) Dropped() uint64 { return r.dropped.Load() }

// Decision is one request's routing decision as the console's API shows it.
type Decision struct {
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	RequestID string    `json:"request_id"`
	Key       string    `json:"key"`
	Surface   string    `json:"surface"`
	Model     string    `json:"model"`
	// Rule is the matched condition's index, or -1 for the fallback
	// (targets[0]) and -2 for a request refused before routing.
	Rule int `json:"rule"`
	// Tried are the chain members the walk reached, in order (called or
	// skipped); at most MaxWalked, TriedTotal says how many there were.
	Tried      []string `json:"tried"`
	TriedTotal int      `json:"tried_total"`
	Target     string   `json:"target"`
	Attempts   int      `json:"attempts"`
	Status     int      `json:"status"`
	Outcome    string   `json:"outcome"`
	Stream     bool     `json:"stream"`
	LatencyMs  float64  `json:"latency_ms"`
	// PromptTokens and CompletionTokens are -1 when the answer reported none.
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	TraceID          string `json:"trace_id,omitempty"`
	// Operation and ObjectID are a batch API call's operation and file or
	// batch id (its API is the Surface); empty for other requests.
	Operation string `json:"operation,omitempty"`
	ObjectID  string `json:"object_id,omitempty"`
}

// read copies slot s if it holds decision seq; ok is false when it holds
// another one or is being written.
func (s *slot) read(seq uint64) (d Decision, ok bool) {
	if s.seq.Load() != seq {
		return d, false
	}
	a, b := s.a.Load(), s.b.Load()
	d = Decision{
		Seq:              seq,
		Time:             time.Unix(0, s.at.Load()).UTC(),
		RequestID:        loadText(&s.requestID.n, s.requestID.w[:]),
		Key:              s.key.load(),
		Model:            loadText(&s.model.n, s.model.w[:]),
		Rule:             int(int32(uint32(a))),
		Status:           int(uint16(a >> 32)),
		Attempts:         int(uint16(a >> 48)),
		Surface:          surfaceName(router.Surface(uint8(b))),
		Outcome:          upstream.Class(uint8(b >> 8)).String(),
		Stream:           b>>16&1 == 1,
		TriedTotal:       int(uint16(b >> 32)),
		Target:           s.target.load(),
		LatencyMs:        float64(s.latency.Load()) / 1e6,
		PromptTokens:     s.prompt.Load(),
		CompletionTokens: s.complete.Load(),
		TraceID:          loadText(&s.traceID.n, s.traceID.w[:]),
	}
	if api := s.api.load(); api != "" {
		d.Surface, d.Operation = api, s.op.load()
		d.ObjectID = loadText(&s.objectID.n, s.objectID.w[:])
	}
	n := min(int(uint8(b>>24)), MaxWalked)
	d.Tried = make([]string, n)
	for i := range n {
		d.Tried[i] = s.walked[i].load()
	}
	return d, s.seq.Load() == seq
}

func surfaceName(s router.Surface) string {
	if s < router.NumSurfaces {
		return s.String()
	}
	return "none"
}

// After returns the decisions after sequence number after, oldest first, at
// most max of them, and the sequence number to ask after next time. It
// stops before a decision still being written, so a caller polling with
// the returned number sees every decision the ring kept; one overwritten
// before it was read (the caller fell more than Size behind) or dropped is
// skipped.
func (r *Ring) After(after uint64, max int) (ds []Decision, next uint64) {
	head := r.head.Load()
	next = after
	if after >= head {
		return nil, after
	}
	from := after + 1
	if head > Size && from < head-Size+1 {
		from = head - Size + 1
	}
	if n := head - from + 1; max > 0 && n > uint64(max) {
		from = head - uint64(max) + 1
	}
	for seq := from; seq <= head; seq++ {
		s := &r.slots[seq%Size]
		d, ok := s.read(seq)
		if ok {
			ds = append(ds, d)
			next = seq
			continue
		}
		cur := s.seq.Load()
		if cur&busy == 0 && cur > seq {
			next = seq // overwritten already: skip it
			continue
		}
		if s.lost.Load() == seq {
			next = seq // dropped (see Add): skip it
			continue
		}
		break // not written yet, or being written: ask again later
	}
	return ds, next
}
