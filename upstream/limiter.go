package upstream

import (
	"sync"
	"time"
)

// Limiter bounds a target's in-flight attempts (concurrency.max_concurrency)
// and the callers waiting for a slot (concurrency.queue_size). Waiters are
// served first come, first served. Safe for concurrent use.
//
// Fast path (a free slot, nobody waiting): one uncontended lock, no
// allocation. Slow path (waiting): a channel and, with a deadline, a timer
// per waiter; the wait is already the expensive case.
type Limiter struct {
	mu       sync.Mutex
	max      int
	queueCap int
	inFlight int
	waiters  []*waiter // FIFO; granted waiters are removed
}

type waiter struct {
	ready chan struct{} // closed when the slot is handed over
}

// NewLimiter returns a limiter with maxConcurrency slots (below 1 means 1)
// and room for queueSize waiters (below 0 means 0: no queue).
func NewLimiter(maxConcurrency, queueSize int) *Limiter {
	l := &Limiter{}
	l.Resize(maxConcurrency, queueSize)
	return l
}

// Resize applies new bounds (a reload that keeps the target's identity).
// Attempts in flight and callers already waiting are kept: a lowered
// max_concurrency takes effect as slots are released; a raised one hands
// free slots to waiters at once. Waiters beyond a lowered queue_size keep
// waiting; only new callers see the smaller queue.
func (l *Limiter) Resize(maxConcurrency, queueSize int) {
	l.mu.Lock()
	l.max = max(maxConcurrency, 1)
	l.queueCap = max(queueSize, 0)
	l.grantLocked()
	l.mu.Unlock()
}

// grantLocked hands free slots to waiters in order; l.mu must be held.
func (l *Limiter) grantLocked() {
	for l.inFlight < l.max && len(l.waiters) > 0 {
		w := l.waiters[0]
		l.waiters[0] = nil
		l.waiters = l.waiters[1:]
		l.inFlight++
		close(w.ready)
	}
}

// TryAcquire takes a free slot if there is one and nobody is waiting for
// it, without waiting; it reports whether it did. A true must be paired
// with one Release.
func (l *Limiter) TryAcquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight < l.max && len(l.waiters) == 0 {
		l.inFlight++
		return true
	}
	return false
}

// Acquire takes a slot. With a free slot it returns (true, ClassOK) at once.
// Otherwise the caller queues: when the queue is full it returns
// (false, ClassSaturated) at once; when deadline passes while waiting (the
// wait counts against the request deadline) it returns (false,
// ClassTimeout); when cancel is closed it returns (false, ClassCanceled).
// A zero deadline or a nil cancel never fire. Every successful Acquire must
// be paired with one Release.
func (l *Limiter) Acquire(deadline time.Time, cancel <-chan struct{}) (ok bool, class Class) {
	l.mu.Lock()
	if l.inFlight < l.max && len(l.waiters) == 0 {
		// Fast path.
		l.inFlight++
		l.mu.Unlock()
		return true, ClassOK
	}
	if len(l.waiters) >= l.queueCap {
		l.mu.Unlock()
		return false, ClassSaturated
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		l.mu.Unlock()
		return false, ClassTimeout
	}
	// Slow path: wait in line.
	w := &waiter{ready: make(chan struct{})}
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()

	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-w.ready:
		return true, ClassOK
	case <-expired:
		class = ClassTimeout
	case <-cancel:
		class = ClassCanceled
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, x := range l.waiters {
		if x == w {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			return false, class
		}
	}
	// Granted while we were giving up: the slot is ours, pass it on.
	l.inFlight--
	l.grantLocked()
	return false, class
}

// Release returns a slot taken by a successful Acquire, handing it to the
// first waiter if there is one.
func (l *Limiter) Release() {
	l.mu.Lock()
	if l.inFlight <= 0 {
		l.mu.Unlock()
		panic("BUG: upstream: Limiter.Release without Acquire")
	}
	l.inFlight--
	l.grantLocked()
	l.mu.Unlock()
}

// QueueDepth returns the callers waiting for a slot (metrics).
func (l *Limiter) QueueDepth() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiters)
}

// InFlight returns the slots taken (metrics).
func (l *Limiter) InFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inFlight
}
