// Package audit writes and verifies Switchyard's audit log (docs/residency.md,
// The audit log): one JSON line per authenticated request saying where it went,
// each line carrying the SHA-256 of the line before it, and Ed25519-signed
// checkpoints. A request copies a few fields into a batch under a mutex;
// one writer goroutine takes the batch every FlushEvery (sooner when it is
// large), formats and hashes its lines and writes them in one call, so a
// request pays neither a wake-up of the writer nor a system call.
package audit

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// MaxBehind is the most lines the writer may be behind before Behind
// reports true and the gateway refuses new requests 503 audit_unavailable.
const MaxBehind = 10_000

// FlushEvery is how often the writer takes the lines added since its last
// turn and writes them to the file: the longest a line waits in memory
// while the writer keeps up.
const FlushEvery = 20 * time.Millisecond

// wakeLines is the batch size at which Add wakes the writer before its
// next turn, so a burst is written in bounded chunks.
const wakeLines = 2048

// queueCap bounds the batch: beyond MaxBehind, requests already admitted
// still find room; a full batch makes Add wait (a line is never dropped).
const queueCap = 1 << 16

// flushBytes is the buffered size past which the writer writes to the file
// in the middle of a batch.
const flushBytes = 256 << 10

// genesis is the prev of the first line of a chain.
var genesis = strings.Repeat("0", 64)

// Options configure a Log.
type Options struct {
	// Path is the log file. Rotated files are named after it: audit.jsonl
	// becomes audit-000000000001.jsonl (the seq of its first line), so a
	// glob lists a set in chain order with the current file last.
	Path string
	// Key signs the checkpoints.
	Key ed25519.PrivateKey
	// CheckpointEvery is the longest time between checkpoints while lines
	// arrive. Default 10s.
	CheckpointEvery time.Duration
	// MaxFileBytes rotates the file once it is past this size. Default 1 GiB.
	MaxFileBytes int64
	// Replica is the replica field of every line (the host name).
	Replica string
	// Now is the clock; nil = time.Now.
	Now func() time.Time
}

// Log is an open audit log. Add and Behind are safe for concurrent use and
// cheap; Close ends the writer. Create it with Open.
type Log struct {
	opt Options

	mu     sync.Mutex
	batch  batch         // lines added since the writer's last turn
	full   sync.Cond     // on mu: the batch has room again, or the log closed
	wait   int           // Adds waiting on full
	closed bool          // the writer took its last batch: Add writes nothing
	wake   chan struct{} // cap 1: the batch reached wakeLines

	pending atomic.Int64 // lines added and not yet written to the file
	syncs   chan chan struct{}
	done    chan struct{}
	closing chan struct{}
	once    sync.Once
	err     atomic.Pointer[error]

	// Writer goroutine state.
	spare     batch // the batch before last, handed back to Add at the next turn
	f         *os.File
	size      int64
	buf       []byte
	prev      [32]byte
	seq       uint64
	firstSeq  uint64 // seq of the current file's first record (0: none yet)
	unsigned  int    // lines since the last checkpoint
	lastCheck time.Time
	heads     map[*upstream.Target][]byte // attemptHead's cache
	replica   []byte                      // ,"replica":"…"
}

// batch holds the lines added between two turns of the writer: each item
// and, in three shared arrays, the variable-length parts copied out of the
// request's pooled memory. The arrays are reused from turn to turn, so a
// batch no larger than an earlier one allocates nothing, and a larger one
// only as its arrays double.
type batch struct {
	items  []item
	bytes  []byte // request ids and models
	chains []string
	steps  []telemetry.Step
}

// item is one request's line; its spans index the batch's arrays.
type item struct {
	at           time.Time
	key, hash    string
	surface      router.Surface
	rule, status int
	usage        upstream.Usage
	reqID, model span // in bytes
	chain        span // in chains
	steps        span // in steps
	// api and op name a batch API call (telemetry.BatchCall; "" = not
	// one); id is its object id, in bytes.
	api, op string
	id      span
}

// span is the part [from, to) of one of a batch's arrays.
type span struct{ from, to int }

// Open opens (or creates) the log at opt.Path and starts its writer. An
// existing file, or the newest rotated one when the file is missing, is
// continued: its last complete line is the chain's head and a partial line
// left by a crash is cut off.
func Open(opt Options) (*Log, error) {
	if opt.CheckpointEvery <= 0 {
		opt.CheckpointEvery = 10 * time.Second
	}
	if opt.MaxFileBytes <= 0 {
		opt.MaxFileBytes = 1 << 30
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if len(opt.Key) != ed25519.PrivateKeySize {
		return nil, errors.New("audit: no signing key")
	}
	l := &Log{opt: opt, wake: make(chan struct{}, 1), syncs: make(chan chan struct{}),
		done: make(chan struct{}), closing: make(chan struct{})}
	l.full.L = &l.mu
	l.replica = upstream.AppendJSONString([]byte(`,"replica":`), opt.Replica)
	if err := l.resume(); err != nil {
		return nil, err
	}
	l.lastCheck = opt.Now()
	go l.run()
	return l, nil
}

// resume opens the current file for appending and finds the chain's head.
func (l *Log) resume() error {
	last, err := lastLine(l.opt.Path, true)
	if errors.Is(err, os.ErrNotExist) || (err == nil && last == nil) {
		// Rotated, then stopped before a whole line reached the new file
		// (which may not exist yet, or be empty): the chain's head is the
		// last line of the newest rotated file.
		if rotated := l.rotatedFiles(); len(rotated) > 0 {
			last, err = lastLine(rotated[len(rotated)-1], false)
		} else {
			err = nil
		}
	}
	if err != nil {
		return err
	}
	if last != nil {
		l.prev = sha256.Sum256(last)
		l.seq = seqOf(last)
	}
	if err := os.MkdirAll(filepath.Dir(l.opt.Path), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(l.opt.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, st.Size()
	if l.size > 0 {
		l.firstSeq = firstSeqOf(l.opt.Path)
	}
	return nil
}

// firstSeqOf returns the seq of the first line of the file at path (1 when
// it cannot be read).
func firstSeqOf(path string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 1
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadBytes('\n')
	if s := seqOf(line); s > 0 {
		return s
	}
	return 1
}

// lastLine returns the last complete line of the file at path (nil when it
// has none). With repair, a partial last line (a crash mid-write) is
// truncated away.
func lastLine(path string, repair bool) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	const chunk = 64 << 10
	var tail []byte
	for off := size; off > 0 && bytes.Count(tail, []byte{'\n'}) < 2; {
		n := min(int64(chunk), off)
		off -= n
		b := make([]byte, n)
		if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
			return nil, err
		}
		tail = append(b, tail...)
	}
	end := bytes.LastIndexByte(tail, '\n')
	if end < len(tail)-1 && repair { // a partial line after the last newline
		if err := f.Truncate(size - int64(len(tail)-end-1)); err != nil {
			return nil, err
		}
	}
	if end < 0 {
		return nil, nil
	}
	tail = tail[:end]
	return tail[bytes.LastIndexByte(tail, '\n')+1:], nil
}

// seqOf reads the seq field of a record or checkpoint line (0 if none).
func seqOf(line []byte) uint64 {
	i := bytes.Index(line, []byte(`"seq":`))
	if i < 0 {
		return 0
	}
	s := line[i+len(`"seq":`):]
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	n, _ := strconv.ParseUint(string(s[:j]), 10, 64)
	return n
}

// rotatedFiles lists the rotated files of the log, oldest first.
func (l *Log) rotatedFiles() []string {
	ext := filepath.Ext(l.opt.Path)
	matches, _ := filepath.Glob(strings.TrimSuffix(l.opt.Path, ext) + "-[0-9]*" + ext)
	sort.Strings(matches)
	return matches
}

// Add queues one request's line: e's request id, key, surface, model,
// rule, walk and status, and hash, the configuration's. e is not retained.
// In the steady state it allocates nothing: the batch's items and their
// buffers are reused.
func (l *Log) Add(e *telemetry.Entry, hash string) {
	l.mu.Lock()
	for len(l.batch.items) >= queueCap && !l.closed {
		select { // the writer's next turn makes room: now, not at its tick
		case l.wake <- struct{}{}:
		default:
		}
		l.wait++
		l.full.Wait()
		l.wait--
	}
	if l.closed { // closed: nothing more is written
		l.mu.Unlock()
		return
	}
	b := &l.batch
	it := item{at: l.opt.Now(), // under mu: times follow the seq order
		key: e.Key, hash: hash, surface: e.Surface, rule: e.Rule, status: e.Status, usage: e.Usage, api: e.Batch.API, op: e.Batch.Op}
	it.reqID.from = len(b.bytes)
	b.bytes = append(b.bytes, e.RequestID...)
	it.reqID.to, it.model.from = len(b.bytes), len(b.bytes)
	b.bytes = append(b.bytes, e.Model...)
	it.model.to, it.id.from = len(b.bytes), len(b.bytes)
	b.bytes = append(b.bytes, e.Batch.ID...)
	it.id.to = len(b.bytes)
	it.chain.from = len(b.chains)
	b.chains = append(b.chains, e.Walked...)
	it.chain.to = len(b.chains)
	it.steps.from = len(b.steps)
	b.steps = append(b.steps, e.Steps...)
	it.steps.to = len(b.steps)
	b.items = append(b.items, it)
	n := len(b.items)
	l.pending.Add(1)
	l.mu.Unlock()
	if n == wakeLines {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// Behind reports whether the writer is more than MaxBehind lines behind
// (or has failed): new requests must be refused until it catches up.
func (l *Log) Behind() bool { return l.pending.Load() > MaxBehind || l.err.Load() != nil }

// Pending returns the lines added and not yet written to the file.
func (l *Log) Pending() int64 { return l.pending.Load() }

// Err returns the writer's first I/O error, or nil.
func (l *Log) Err() error {
	if p := l.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Sync waits until every line added before it is written to the file.
func (l *Log) Sync() {
	c := make(chan struct{})
	select {
	case l.syncs <- c:
		select {
		case <-c:
		case <-l.done:
		}
	case <-l.done:
	}
}

// Close writes the queued lines and a final checkpoint, syncs and closes
// the file. Add must not be called after Close returns.
func (l *Log) Close() error {
	l.once.Do(func() { close(l.closing) })
	<-l.done
	return l.Err()
}

// fail records err, the writer's first I/O error; a nil err costs nothing
// (keeping the address of fail's own parameter would move every error
// passed in, nil included, to the heap).
func (l *Log) fail(err error) {
	if err != nil {
		l.setErr(err)
	}
}

func (l *Log) setErr(err error) { l.err.CompareAndSwap(nil, &err) }

// run is the writer goroutine: every FlushEvery (or when Add finds the
// batch large) it writes the lines added since its last turn.
func (l *Log) run() {
	defer close(l.done)
	tick := time.NewTicker(min(l.opt.CheckpointEvery, FlushEvery))
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			l.turn(false)
			if l.unsigned > 0 && l.opt.Now().Sub(l.lastCheck) >= l.opt.CheckpointEvery {
				l.checkpoint()
				l.flush()
				l.fsync()
			}
		case <-l.wake:
			l.turn(false)
		case c := <-l.syncs:
			l.turn(false)
			close(c)
		case <-l.closing:
			l.turn(true)
			if l.unsigned > 0 {
				l.checkpoint()
			}
			l.flush()
			l.fsync()
			l.fail(l.f.Close())
			return
		}
	}
}

// turn takes the batch (the last one when last: Add writes nothing after
// it), formats and hashes its lines and writes them to the file.
func (l *Log) turn(last bool) {
	l.mu.Lock()
	b := l.batch
	l.batch, l.spare = l.spare, batch{}
	l.closed = last
	if l.wait > 0 {
		l.full.Broadcast()
	}
	l.mu.Unlock()
	for i := range b.items {
		l.take(&b, &b.items[i])
		if len(l.buf) >= flushBytes {
			l.flush()
		}
	}
	l.flush()
	l.pending.Add(-int64(len(b.items)))
	if cap(b.items) > 4*wakeLines && len(b.items) < wakeLines/2 {
		b = batch{} // a burst is over: its batch's memory goes back
	}
	// Nothing of an old configuration (targets, key names) is kept alive.
	clear(b.items)
	clear(b.chains)
	clear(b.steps)
	l.spare = batch{b.items[:0], b.bytes[:0], b.chains[:0], b.steps[:0]}
}

// take formats and hashes one line into the buffer, and rotates the file
// when the buffer would take it past MaxFileBytes.
func (l *Log) take(b *batch, it *item) {
	l.seq++
	if l.firstSeq == 0 {
		l.firstSeq = l.seq
	}
	start := len(l.buf)
	l.buf = l.appendRecord(l.buf, b, it)
	l.endLine(start)
	l.unsigned++
	if l.size+int64(len(l.buf)) > l.opt.MaxFileBytes {
		l.rotate()
	}
}

// endLine hashes the line that starts at buf[start:] and ends it.
func (l *Log) endLine(start int) {
	l.prev = sha256.Sum256(l.buf[start:])
	l.buf = append(l.buf, '\n')
}

func (l *Log) appendRecord(b []byte, bt *batch, it *item) []byte {
	b = append(b, `{"time":"`...)
	b = it.at.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = append(b, l.replica...)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, l.seq, 10)
	b = append(b, `,"request_id":`...)
	b = appendJSONString(b, byteconv.String(bt.bytes[it.reqID.from:it.reqID.to]))
	b = append(b, `,"key":`...)
	b = appendJSONString(b, it.key)
	b = append(b, `,"surface":`...)
	if it.api != "" {
		// A batch API call: its API is the surface, with the operation
		// and the file or batch id.
		b = appendJSONString(b, it.api)
		b = append(b, `,"operation":`...)
		b = appendJSONString(b, it.op)
		b = append(b, `,"id":`...)
		b = appendJSONString(b, byteconv.String(bt.bytes[it.id.from:it.id.to]))
	} else {
		b = appendJSONString(b, surfaceName(it.surface))
	}
	b = append(b, `,"model":`...)
	b = appendJSONString(b, byteconv.String(bt.bytes[it.model.from:it.model.to]))
	b = append(b, `,"rule":`...)
	switch {
	case it.rule == telemetry.RuleNotRouted:
		b = append(b, `"none"`...)
	case it.rule < 0:
		b = append(b, `"fallback"`...)
	default:
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(it.rule), 10)
		b = append(b, '"')
	}
	b = append(b, `,"chain":[`...)
	for i, c := range bt.chains[it.chain.from:it.chain.to] {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, c)
	}
	b = append(b, `],"attempts":[`...)
	for i, s := range bt.steps[it.steps.from:it.steps.to] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l.attemptHead(s.Target)...)
		if s.Refused {
			b = append(b, `"residency_refused"`...)
		} else {
			b = appendJSONString(b, s.Class.String())
		}
		b = append(b, '}')
	}
	b = append(b, `],"status":`...)
	b = strconv.AppendInt(b, int64(it.status), 10)
	b = appendUsage(b, &it.usage)
	b = append(b, `,"config_hash":`...)
	b = appendJSONString(b, it.hash)
	b = append(b, `,"prev":"`...)
	b = hex.AppendEncode(b, l.prev[:])
	return append(b, `"}`...)
}

// appendUsage appends the answer's usage in its four parts (docs/quotas.md,
// Cached tokens), `,"usage":{"input":…,"cache_read":…,"cache_write":…,
// "output":…}`, each part the answer reported; nothing when it reported
// none.
func appendUsage(b []byte, u *upstream.Usage) []byte {
	if !u.Known() {
		return b
	}
	b = append(b, `,"usage":{`...)
	if u.HasPrompt {
		b = append(b, `"input":`...)
		b = strconv.AppendInt(b, u.Input(), 10)
		b = append(b, `,"cache_read":`...)
		b = strconv.AppendInt(b, u.CacheRead, 10)
		b = append(b, `,"cache_write":`...)
		b = strconv.AppendInt(b, u.CacheWrite, 10)
		if u.HasCompletion {
			b = append(b, ',')
		}
	}
	if u.HasCompletion {
		b = append(b, `"output":`...)
		b = strconv.AppendInt(b, u.Completion, 10)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string, as upstream.AppendJSONString
// does, in one copy when s holds nothing to escape (ids, names, hashes).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return upstream.AppendJSONString(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func surfaceName(s router.Surface) string {
	if s < router.NumSurfaces {
		return s.String()
	}
	return "none"
}

// attemptHead is the start of an attempt naming t, up to its outcome:
// {"target":…,"provider":…,"host":…,"residency":…,"outcome": with the
// host[:port] of t's base URL, never its user info, path or query. Built
// once per target (the cache is dropped when it grows past a few reloads'
// worth); targets do not change once built.
func (l *Log) attemptHead(t *upstream.Target) []byte {
	if h, ok := l.heads[t]; ok {
		return h
	}
	if len(l.heads) >= 4096 || l.heads == nil {
		l.heads = make(map[*upstream.Target][]byte)
	}
	host := ""
	if u, err := url.Parse(t.Endpoint.BaseURL); err == nil {
		host = u.Host
	}
	b := append([]byte(nil), `{"target":`...)
	b = appendJSONString(b, t.Name)
	b = append(b, `,"provider":`...)
	b = appendJSONString(b, t.Provider)
	b = append(b, `,"host":`...)
	b = appendJSONString(b, host)
	b = append(b, `,"residency":`...)
	b = appendJSONString(b, t.Residency)
	b = append(b, `,"outcome":`...)
	l.heads[t] = b
	return b
}

// checkpointMessage is what a checkpoint's signature covers.
func checkpointMessage(at string, seq uint64, head string) []byte {
	return fmt.Appendf(nil, "switchyard audit checkpoint\n%s\n%d\n%s", at, seq, head)
}

// checkpoint appends a signed checkpoint over the chain's head.
func (l *Log) checkpoint() {
	at := l.opt.Now().UTC().Format(time.RFC3339Nano)
	head := hex.EncodeToString(l.prev[:])
	sig := ed25519.Sign(l.opt.Key, checkpointMessage(at, l.seq, head))
	start := len(l.buf)
	l.buf = fmt.Appendf(l.buf, `{"checkpoint":%q,"seq":%d,"head":"%s","sig":"%s"}`, at, l.seq, head, base64.StdEncoding.EncodeToString(sig))
	l.endLine(start)
	l.unsigned = 0
	l.lastCheck = l.opt.Now()
}

// flush writes the buffered lines to the file in one call.
func (l *Log) flush() {
	if len(l.buf) == 0 {
		return
	}
	n, err := l.f.Write(l.buf)
	l.size += int64(n)
	l.fail(err)
	l.buf = l.buf[:0]
}

func (l *Log) fsync() { l.fail(l.f.Sync()) }

// rotate closes the current file with a checkpoint and starts the next:
// its first line's prev is that checkpoint's hash.
func (l *Log) rotate() {
	l.checkpoint()
	l.flush()
	l.fsync()
	l.fail(l.f.Close())
	ext := filepath.Ext(l.opt.Path)
	name := fmt.Sprintf("%s-%012d%s", strings.TrimSuffix(l.opt.Path, ext), l.firstSeq, ext)
	if _, err := os.Stat(name); err == nil { // resumed file: firstSeq unknown
		name = fmt.Sprintf("%s-%012d-%d%s", strings.TrimSuffix(l.opt.Path, ext), l.firstSeq, l.seq, ext)
	}
	l.fail(os.Rename(l.opt.Path, name))
	f, err := os.OpenFile(l.opt.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o640)
	if err != nil {
		l.fail(err)
		return
	}
	l.f, l.size, l.firstSeq = f, 0, 0
	if d, err := os.Open(filepath.Dir(l.opt.Path)); err == nil {
		_ = d.Sync() // the rename survives a crash
		d.Close()
	}
}
