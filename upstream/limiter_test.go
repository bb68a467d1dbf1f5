package upstream

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLimiterSaturatesWhenQueueFull(t *testing.T) {
	l := NewLimiter(1, 1)
	if ok, _ := l.Acquire(time.Time{}, nil); !ok {
		t.Fatal("first Acquire refused")
	}
	got := make(chan bool)
	go func() {
		ok, _ := l.Acquire(time.Now().Add(5*time.Second), nil)
		got <- ok
	}()
	waitFor(t, func() bool { return l.QueueDepth() == 1 })
	start := time.Now()
	ok, class := l.Acquire(time.Now().Add(5*time.Second), nil)
	if ok || class != ClassSaturated {
		t.Fatalf("Acquire with full queue = %v, %v; want false, saturated", ok, class)
	}
	if time.Since(start) > time.Second {
		t.Fatal("saturated Acquire waited instead of failing at once")
	}
	l.Release()
	if !<-got {
		t.Fatal("queued waiter did not get the released slot")
	}
	if l.InFlight() != 1 || l.QueueDepth() != 0 {
		t.Fatalf("in flight %d, queue %d; want 1, 0", l.InFlight(), l.QueueDepth())
	}
	l.Release()
}

func TestLimiterDeadlineAndCancel(t *testing.T) {
	l := NewLimiter(1, 10)
	l.Acquire(time.Time{}, nil)
	ok, class := l.Acquire(time.Now().Add(20*time.Millisecond), nil)
	if ok || class != ClassTimeout {
		t.Fatalf("Acquire past deadline = %v, %v; want false, timeout", ok, class)
	}
	ok, class = l.Acquire(time.Now().Add(-time.Second), nil)
	if ok || class != ClassTimeout {
		t.Fatalf("Acquire with a passed deadline = %v, %v; want false, timeout", ok, class)
	}
	cancel := make(chan struct{})
	res := make(chan Class)
	go func() { _, c := l.Acquire(time.Time{}, cancel); res <- c }()
	waitFor(t, func() bool { return l.QueueDepth() == 1 })
	close(cancel)
	if c := <-res; c != ClassCanceled {
		t.Fatalf("canceled Acquire class %v", c)
	}
	if l.QueueDepth() != 0 {
		t.Fatalf("queue depth %d after the waiters left", l.QueueDepth())
	}
	l.Release()
	if l.InFlight() != 0 {
		t.Fatalf("in flight %d, want 0", l.InFlight())
	}
}

func TestLimiterManyGoroutines(t *testing.T) {
	const maxC, workers, rounds = 3, 32, 50
	l := NewLimiter(maxC, workers)
	var cur, peak, served atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				ok, class := l.Acquire(time.Now().Add(10*time.Second), nil)
				if !ok {
					t.Errorf("Acquire failed: %v", class)
					return
				}
				n := cur.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				served.Add(1)
				cur.Add(-1)
				l.Release()
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > maxC {
		t.Fatalf("peak in flight %d > max_concurrency %d", p, maxC)
	}
	if served.Load() != workers*rounds {
		t.Fatalf("served %d, want %d", served.Load(), workers*rounds)
	}
	if l.InFlight() != 0 || l.QueueDepth() != 0 {
		t.Fatalf("leftover in flight %d queue %d", l.InFlight(), l.QueueDepth())
	}
}

func TestLimiterTimeoutRacingGrantDoesNotLeak(t *testing.T) {
	l := NewLimiter(1, 100)
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		l.Acquire(time.Time{}, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, _ := l.Acquire(time.Now().Add(time.Duration(i%3)*time.Millisecond), nil); ok {
				l.Release()
			}
		}()
		time.Sleep(time.Duration(i%2) * time.Millisecond)
		l.Release()
		wg.Wait()
	}
	if l.InFlight() != 0 || l.QueueDepth() != 0 {
		t.Fatalf("leaked: in flight %d queue %d", l.InFlight(), l.QueueDepth())
	}
}

func TestLimiterResize(t *testing.T) {
	l := NewLimiter(1, 5)
	l.Acquire(time.Time{}, nil)
	got := make(chan bool)
	go func() { ok, _ := l.Acquire(time.Now().Add(5*time.Second), nil); got <- ok }()
	waitFor(t, func() bool { return l.QueueDepth() == 1 })
	l.Resize(2, 5) // a raised limit serves the waiter at once
	if !<-got {
		t.Fatal("waiter not served after raising max_concurrency")
	}
	l.Resize(1, 0)
	if ok, c := l.Acquire(time.Time{}, nil); ok || c != ClassSaturated {
		t.Fatalf("Acquire over a lowered limit with no queue = %v, %v", ok, c)
	}
	l.Release()
	l.Release()
	if l.InFlight() != 0 {
		t.Fatalf("in flight %d", l.InFlight())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("condition not reached within 1s")
}

// TryAcquire takes a free slot only: never past max, never ahead of a
// waiter, and its slot is released like Acquire's.
func TestLimiterTryAcquire(t *testing.T) {
	l := NewLimiter(1, 1)
	if !l.TryAcquire() {
		t.Fatal("free slot not taken")
	}
	if l.TryAcquire() {
		t.Fatal("took a second slot of one")
	}
	got := make(chan bool)
	go func() {
		ok, _ := l.Acquire(time.Now().Add(5*time.Second), nil)
		got <- ok
	}()
	for l.QueueDepth() == 0 {
		time.Sleep(time.Millisecond)
	}
	l.Release() // hands the slot to the waiter
	if !<-got {
		t.Fatal("waiter not served")
	}
	if l.TryAcquire() {
		t.Fatal("took the slot the waiter holds")
	}
	l.Release()
	if !l.TryAcquire() || l.InFlight() != 1 {
		t.Fatalf("slot not free after release: in flight %d", l.InFlight())
	}
	l.Release()
}
