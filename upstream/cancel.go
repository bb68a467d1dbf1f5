package upstream

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/deadline"
)

// A client that goes away while its request waits for a limiter slot or an
// upstream call cancels that wait or call within a second (docs/operations.md, Metrics and logs): the
// upstream connection is closed, nothing is retried or failed over, the
// breaker hears a neutral outcome, and the attempt is counted canceled.
//
// fasthttp gives a handler no signal when its client leaves, so the client
// socket is peeked at (recv MSG_PEEK|MSG_DONTWAIT: a FIN or reset means
// gone; waiting bytes, a pipelined next request, mean alive and are never
// consumed). Off the fast path: a walk's callGuard has a timer pending
// (see arm), and only a walk still running when it fires, at most
// watchDelay after the walk began, joins the one shared watcher goroutine,
// which peeks every watchEvery and exits when nobody is left.
const (
	watchDelay = 300 * time.Millisecond
	watchEvery = 250 * time.Millisecond
)

// callGuard watches one walk's client, from its first limiter wait or
// upstream call until the walk (or its committed stream) ends. The walk's
// goroutine (then the stream writer's) owns it; the watcher touches it only
// while registered, under clientWatch.mu.
type callGuard struct {
	client net.Conn
	timer  *time.Timer
	// due is when timer fires next (deadline.Mono), if it is pending: a
	// released guard leaves it running (see arm). Only the guard's owner
	// touches it.
	due   int64
	state atomic.Int32 // guardIdle, guardArmed, guardWatched
	gone  atomic.Bool
	// cancel is closed when the client is found gone (a limiter wait
	// selects on it); replaced only between walks.
	cancel chan struct{}
	// conn is the upstream connection carrying the call now, if bound.
	conn atomic.Pointer[trackedConn]
	// deadline is the current call's deadline and begun when it began, on
	// the walk's clock (see roundTripGuarded).
	deadline, begun time.Time
	// stream is the connection under the current call's streamed answer,
	// if any (see streamConn).
	stream streamConn
	// peek is the watcher's: the client socket's peeker, made when g joins.
	peek peeker
}

const (
	guardIdle int32 = iota
	guardArmed
	guardWatched
)

var guardPool = sync.Pool{New: func() any {
	g := &callGuard{cancel: make(chan struct{})}
	g.timer = time.AfterFunc(time.Hour, g.fire)
	g.timer.Stop()
	return g
}}

// acquireGuard returns an idle guard for the client connection c and arms
// its timer.
func acquireGuard(c net.Conn) *callGuard {
	g := guardPool.Get().(*callGuard)
	g.start(c)
	return g
}

// start readies g for a walk whose client is c.
func (g *callGuard) start(c net.Conn) {
	if g.gone.Load() {
		g.cancel = make(chan struct{})
		g.gone.Store(false)
	}
	g.client = c
	g.state.Store(guardArmed)
	g.arm()
}

// arm makes g's timer fire within watchDelay. A timer its last walk left
// pending is kept when it fires soon enough: re-arming moves a runtime
// timer on every walk (and stopping it on release another), while a pooled
// guard serves many walks in a watchDelay. A pending timer may then fire
// early in this walk, which only makes the watcher look at a live client
// once (and release take it back); a walk still running watchDelay after
// it began is always watched.
func (g *callGuard) arm() {
	now := deadline.Mono()
	if left := g.due - now; left > 0 && left <= int64(watchDelay) {
		return
	}
	g.due = now + int64(watchDelay)
	g.timer.Reset(watchDelay)
}

// release stops watching and pools g. Once it returns the watcher no longer
// touches g.
func (g *callGuard) release() {
	g.stop()
	guardPool.Put(g)
}

// stop ends g's walk: once it returns the watcher no longer touches g.
func (g *callGuard) stop() {
	g.dropStream()
	// The timer is left pending (see arm): firing for an idle guard does
	// nothing.
	if !g.state.CompareAndSwap(guardArmed, guardIdle) {
		clientWatch.remove(g)
	}
	g.conn.Store(nil)
	g.client = nil
	g.deadline, g.begun = time.Time{}, time.Time{}
}

// fire runs on the timer's goroutine: the walk is still running after
// watchDelay, so its client is watched from now on.
func (g *callGuard) fire() { clientWatch.add(g) }

// Gone reports whether the client was found gone.
func (g *callGuard) Gone() bool { return g.gone.Load() }

// bind makes c the connection to close should the client go; if it is
// already gone, c is closed at once.
func (g *callGuard) bind(c *trackedConn) {
	if c == nil {
		return
	}
	g.conn.Store(c)
	if g.gone.Load() {
		if c := g.conn.Swap(nil); c != nil {
			c.abort()
		}
	}
}

// unbind takes c back; false means the watcher closed it.
func (g *callGuard) unbind(c *trackedConn) bool {
	if c == nil {
		return true
	}
	return g.conn.CompareAndSwap(c, nil)
}

// cancelNow marks the client gone, wakes a limiter wait and closes the
// bound upstream connection. Called under clientWatch.mu.
func (g *callGuard) cancelNow() {
	if g.gone.Swap(true) {
		return
	}
	close(g.cancel)
	if c := g.conn.Swap(nil); c != nil {
		c.abort()
	}
}

// abort closes the connection under a departed client's call: the read
// blocked on it fails at once, and the connection is never pooled again.
func (c *trackedConn) abort() {
	c.canceled.Store(true)
	_ = c.Conn.Close()
}

// watcher peeks at the clients of long walks. Safe for concurrent use.
type watcher struct {
	mu      sync.Mutex
	guards  []*callGuard
	running bool
}

var clientWatch watcher

func (w *watcher) add(g *callGuard) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Under mu, so release either sees guardWatched and removes g, or wins
	// the swap back to idle first and g is never added.
	if !g.state.CompareAndSwap(guardArmed, guardWatched) {
		return
	}
	g.peek = peeker{}
	g.peek.init(g.client)
	w.guards = append(w.guards, g)
	if !w.running {
		w.running = true
		go w.run()
	}
}

func (w *watcher) remove(g *callGuard) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, x := range w.guards {
		if x == g {
			last := len(w.guards) - 1
			w.guards[i] = w.guards[last]
			w.guards[last] = nil
			w.guards = w.guards[:last]
			break
		}
	}
	g.state.Store(guardIdle)
}

// run peeks at every watched client each watchEvery, cancelling the calls
// of those gone, and returns when no walk is watched.
func (w *watcher) run() {
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for {
		w.mu.Lock()
		for _, g := range w.guards {
			if !g.gone.Load() && g.peek.state() == peekClosed {
				g.cancelNow()
			}
		}
		if len(w.guards) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		<-tick.C
	}
}
