package quota

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// maxCombined bounds the checks one batch carries; maxInflight the
// batches out at once (per store).
const (
	maxCombined = 64
	maxInflight = 2
)

// combiner sends the checks of requests that reach the store together in
// one write, with one script call per subject for all of that subject's
// checks (the script takes them in order, as if each were its own call at
// the same instant). Each request still waits for exactly one round trip
// and gets its own answer; what is shared is the cost around it: on one
// core a loopback write(2) costs the gateway about as much as the rest of
// a check, and a script call costs Redis several times what the check's
// own arithmetic does (bench/HISTORY.md,
// 2026-12-02 (3feaa22..cd63125)).
//
// The first check of a batch leads it: it yields once, so that the
// goroutines already runnable (requests about to check) can join, then
// sends the batch and hands each member its part of the reply. Nothing
// waits on a timer: a check that arrives alone is sent as soon as its
// goroutine runs again.
type combiner struct {
	client  rueidis.Client
	timeout time.Duration

	mu    sync.Mutex
	open  *batch        // the batch taking members; nil when none is
	slots chan struct{} // one per batch out

	// batches counts batches sent, scripts their script calls.
	batches, scripts atomic.Int64
}

// answer is one check's part of its script's reply: the server's day and
// month, then {1, per key held, room, reset µs} or {0, denied key (from
// 1), wait µs}.
type answer struct {
	day, month int64
	n          int
	vals       [1 + 3*NumKinds]int64
}

// member is one check in a batch.
type member struct {
	s      *Subject
	tokens int64
	ans    answer
	err    error
}

// scriptCall is one script call's keys and arguments.
type scriptCall struct{ keys, args []string }

// group is the members of one subject in a batch, in arrival order: one
// script call.
type group struct {
	s       *Subject
	members []int
}

// batch is the checks of one write. It is pooled: refs counts the members
// that have yet to take their answer, and the last one puts it back.
type batch struct {
	members []member
	groups  []group
	calls   []scriptCall
	cmds    []rueidis.Completed
	results []rueidis.RedisResult
	nums    numArena
	// done carries one token per member but the leader, sent once every
	// answer is in place; buffered, so the leader never blocks on it.
	done chan struct{}
	refs atomic.Int32
}

func newCombiner(client rueidis.Client, timeout time.Duration) combiner {
	return combiner{client: client, timeout: timeout, slots: make(chan struct{}, maxInflight)}
}

var batches = sync.Pool{New: func() any {
	return &batch{members: make([]member, 0, maxCombined), done: make(chan struct{}, maxCombined)}
}}

// check reserves tokens for s, in the batch being filled or a new one it
// leads, and returns its answer.
func (c *combiner) check(s *Subject, tokens int64) (answer, error) {
	c.mu.Lock()
	b := c.open
	if b == nil {
		b = batches.Get().(*batch)
		b.members = append(b.members, member{s: s, tokens: tokens})
		c.open = b
		c.mu.Unlock()
		c.lead(b)
		return b.take(0)
	}
	i := len(b.members)
	b.members = append(b.members, member{s: s, tokens: tokens})
	if len(b.members) == maxCombined {
		c.open = nil
	}
	c.mu.Unlock()
	<-b.done
	return b.take(i)
}

// lead lets the checks already on their way join b, waits for a free
// slot (at most maxInflight batches are out at once, so while Redis is
// slow the next batch keeps taking members instead of going out small),
// closes b, sends it and wakes its members. The deadline counts from
// before the wait: no check waits past the store's timeout in all.
func (c *combiner) lead(b *batch) {
	runtime.Gosched()
	ctx := getCallCtx(c.timeout)
	var err error
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.mu.Lock()
	if c.open == b {
		c.open = nil
	}
	c.mu.Unlock()
	// Closed: members is final.
	b.refs.Store(int32(len(b.members)))
	if err == nil {
		c.send(b, ctx)
		<-c.slots
	} else {
		for i := range b.members {
			b.members[i].err = err
		}
	}
	for range len(b.members) - 1 {
		b.done <- struct{}{}
	}
}

// take returns member i's answer and lets go of b.
func (b *batch) take(i int) (answer, error) {
	m := b.members[i]
	if b.refs.Add(-1) == 0 {
		clear(b.members) // drop the subjects and errors
		b.members = b.members[:0]
		batches.Put(b)
	}
	return m.ans, m.err
}

// send makes b's script calls, one per subject, and sets every member's
// answer or error.
func (c *combiner) send(b *batch, ctx *callCtx) {
	b.groups, b.calls = b.groups[:0], b.calls[:0]
	for i := range b.members {
		m := &b.members[i]
		g := 0
		for g < len(b.groups) && b.groups[g].s != m.s {
			g++
		}
		if g == len(b.groups) {
			// Both keep the slices of earlier batches.
			if g < cap(b.groups) {
				b.groups = b.groups[:g+1]
			} else {
				b.groups = append(b.groups, group{})
			}
			if g < cap(b.calls) {
				b.calls = b.calls[:g+1]
			} else {
				b.calls = append(b.calls, scriptCall{})
			}
			b.groups[g].s, b.groups[g].members = m.s, b.groups[g].members[:0]
			b.calls[g].keys = m.s.redisKeys
			b.calls[g].args = append(b.calls[g].args[:0], m.s.redisArgs...)
		}
		b.groups[g].members = append(b.groups[g].members, i)
		b.calls[g].args = append(b.calls[g].args, b.nums.str(m.tokens))
	}
	c.batches.Add(1)
	c.scripts.Add(int64(len(b.calls)))
	results := runScripts(ctx, c.client, reserveSHA, reserveSource, b.calls, b)
	held := false // rueidis may still hold a command (it timed out unsent)
	for g := range b.groups {
		if results[g].NonRedisError() != nil {
			held = true
		}
		b.answer(&b.groups[g], results[g])
	}
	if held {
		b.nums.drop() // the arguments' bytes stay with the commands
	} else {
		ctx.release()
		b.nums.reset()
	}
	clear(b.results)
	for g := range b.groups {
		b.groups[g].s = nil // the subject may outlive its config otherwise
		b.calls[g].keys = nil
	}
}

var errBadReply = errors.New("quota: bad reply from the reserve script")

// answer splits one script reply among g's members.
func (b *batch) answer(g *group, res rueidis.RedisResult) {
	arr, err := res.ToArray()
	pos := 2
	var day, month int64
	if err == nil && len(arr) < pos {
		err = errBadReply
	}
	if err == nil {
		day, err = arr[0].AsInt64()
	}
	if err == nil {
		month, err = arr[1].AsInt64()
	}
	for _, i := range g.members {
		m := &b.members[i]
		if err != nil {
			m.err = err
			continue
		}
		a := &m.ans
		a.day, a.month = day, month
		a.n = 3 // a refusal: 0, key, wait
		if pos < len(arr) {
			if ok, _ := arr[pos].AsInt64(); ok == 1 {
				a.n = 1 + 3*len(g.s.kinds)
			}
		}
		if pos+a.n > len(arr) {
			m.err, err = errBadReply, errBadReply
			continue
		}
		for k := range a.n {
			if a.vals[k], err = arr[pos+k].AsInt64(); err != nil {
				m.err = err
				break
			}
		}
		pos += a.n
	}
	if err == nil && pos != len(arr) {
		for _, i := range g.members {
			b.members[i].err = errBadReply
		}
	}
}

// runScripts sends calls of the script src (sha its SHA-1) as one
// pipeline of EVALSHA, and those the server does not know the script for
// (a restarted or flushed Redis) again as EVAL, which loads it: a call
// that failed with NOSCRIPT did not run, so sending it again cannot count
// anything twice. b, when set, lends its scratch slices.
func runScripts(ctx context.Context, c rueidis.Client, sha, src string, calls []scriptCall, b *batch) []rueidis.RedisResult {
	var cmds []rueidis.Completed
	if b != nil {
		cmds = b.cmds[:0]
	}
	for _, sc := range calls {
		cmds = append(cmds, c.B().Evalsha().Sha1(sha).Numkeys(int64(len(sc.keys))).Key(sc.keys...).Arg(sc.args...).Build())
	}
	var results []rueidis.RedisResult
	if len(cmds) == 1 && b != nil {
		// Do, not DoMulti: DoMulti's result slice is an allocation.
		results = append(b.results[:0], c.Do(ctx, cmds[0]))
		b.results = results
	} else {
		results = c.DoMulti(ctx, cmds...)
	}
	var again []rueidis.Completed
	var idx []int
	for i, res := range results {
		if re, ok := rueidis.IsRedisErr(res.Error()); ok && re.IsNoScript() {
			sc := calls[i]
			idx = append(idx, i)
			again = append(again, c.B().Eval().Script(src).Numkeys(int64(len(sc.keys))).Key(sc.keys...).Arg(sc.args...).Build())
		}
	}
	if len(again) > 0 {
		for j, res := range c.DoMulti(ctx, again...) {
			results[idx[j]] = res
		}
	}
	clear(cmds) // rueidis has taken them back
	if b != nil {
		b.cmds = cmds[:0]
	}
	return results
}
