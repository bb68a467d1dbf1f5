package upstream

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustAllow(t *testing.T, b *Breaker, now time.Time) Ticket {
	t.Helper()
	tk, ok := b.Allow(now)
	if !ok {
		t.Fatalf("Allow refused in state %v", b.State(now))
	}
	return tk
}

func TestBreakerOpensAfterConsecutiveCountedFailures(t *testing.T) {
	b := NewBreaker(BreakerSettings{FailureThreshold: 3, SuccessThreshold: 1, MaxHalfOpen: 1, OpenTimeout: 10 * time.Second})
	for i := 0; i < 2; i++ {
		b.Done(mustAllow(t, b, t0), ClassServer, t0)
	}
	// A success resets the run: two more failures do not open it.
	b.Done(mustAllow(t, b, t0), ClassOK, t0)
	for i := 0; i < 2; i++ {
		b.Done(mustAllow(t, b, t0), ClassTransport, t0)
	}
	if s := b.State(t0); s != BreakerClosed {
		t.Fatalf("state after success then 2 failures = %v, want closed", s)
	}
	b.Done(mustAllow(t, b, t0), ClassTimeout, t0)
	if s := b.State(t0); s != BreakerOpen {
		t.Fatalf("state after 3 consecutive failures = %v, want open", s)
	}
	if _, ok := b.Allow(t0.Add(9 * time.Second)); ok {
		t.Fatal("open breaker admitted a call before its timeout")
	}
}

func TestBreakerNeutralClassesNeitherCountNorReset(t *testing.T) {
	b := NewBreaker(BreakerSettings{FailureThreshold: 2, OpenTimeout: time.Second})
	b.Done(mustAllow(t, b, t0), ClassServer, t0)
	for _, c := range []Class{ClassRateLimited, ClassContextLength, ClassClient, ClassAuth, ClassCanceled, ClassSaturated} {
		for i := 0; i < 5; i++ {
			b.Done(mustAllow(t, b, t0), c, t0)
		}
	}
	if s := b.State(t0); s != BreakerClosed {
		t.Fatalf("neutral classes opened the breaker: %v", s)
	}
	// The earlier failure still counts: one more opens it.
	b.Done(mustAllow(t, b, t0), ClassServer, t0)
	if s := b.State(t0); s != BreakerOpen {
		t.Fatalf("neutral classes reset the failure run: state %v", s)
	}
}

func TestBreakerHalfOpenProbesAndClose(t *testing.T) {
	b := NewBreaker(BreakerSettings{FailureThreshold: 1, SuccessThreshold: 2, MaxHalfOpen: 2, OpenTimeout: 10 * time.Second})
	b.Done(mustAllow(t, b, t0), ClassServer, t0)
	t1 := t0.Add(10 * time.Second)
	if s := b.State(t1); s != BreakerHalfOpen {
		t.Fatalf("State after timeout = %v, want half_open", s)
	}
	p1 := mustAllow(t, b, t1)
	p2 := mustAllow(t, b, t1)
	if _, ok := b.Allow(t1); ok {
		t.Fatal("half-open admitted more than max_half_threshold probes")
	}
	b.Done(p1, ClassOK, t1)
	if s := b.State(t1); s != BreakerHalfOpen {
		t.Fatalf("closed after 1 of 2 successes: %v", s)
	}
	// The freed probe slot admits another probe.
	p3 := mustAllow(t, b, t1)
	b.Done(p2, ClassOK, t1)
	if s := b.State(t1); s != BreakerClosed {
		t.Fatalf("state after success_threshold successes = %v, want closed", s)
	}
	// p3 belongs to the half-open generation: its late failure is ignored.
	b.Done(p3, ClassServer, t1)
	if s := b.State(t1); s != BreakerClosed {
		t.Fatalf("a stale half-open ticket changed the closed state: %v", s)
	}
}

func TestBreakerHalfOpenFailureReopens(t *testing.T) {
	b := NewBreaker(BreakerSettings{FailureThreshold: 1, OpenTimeout: 5 * time.Second})
	b.Done(mustAllow(t, b, t0), ClassServer, t0)
	t1 := t0.Add(5 * time.Second)
	b.Done(mustAllow(t, b, t1), ClassTimeout, t1)
	if s := b.State(t1); s != BreakerOpen {
		t.Fatalf("half-open failure left state %v, want open", s)
	}
	// The open period restarts from the re-open.
	if _, ok := b.Allow(t1.Add(4 * time.Second)); ok {
		t.Fatal("re-opened breaker admitted a call before a full timeout")
	}
	if _, ok := b.Allow(t1.Add(5 * time.Second)); !ok {
		t.Fatal("re-opened breaker did not go half-open after its timeout")
	}
}

func TestBreakerNeutralProbeFreesSlot(t *testing.T) {
	b := NewBreaker(BreakerSettings{FailureThreshold: 1, OpenTimeout: time.Second})
	b.Done(mustAllow(t, b, t0), ClassServer, t0)
	t1 := t0.Add(time.Second)
	b.Done(mustAllow(t, b, t1), ClassRateLimited, t1)
	if s := b.State(t1); s != BreakerHalfOpen {
		t.Fatalf("neutral probe decided the state: %v", s)
	}
	mustAllow(t, b, t1) // the slot is free again
}

func TestBreakerStaleTicketCannotChangeNewerState(t *testing.T) {
	b := NewBreaker(BreakerSettings{FailureThreshold: 1, OpenTimeout: time.Second})
	slow := mustAllow(t, b, t0) // e.g. a long stream admitted while closed
	b.Done(mustAllow(t, b, t0), ClassServer, t0)
	t1 := t0.Add(time.Second)
	b.Done(mustAllow(t, b, t1), ClassOK, t1) // half-open probe closes it
	if s := b.State(t1); s != BreakerClosed {
		t.Fatalf("state %v, want closed", s)
	}
	b.Done(slow, ClassServer, t1) // the old stream fails late
	if s := b.State(t1); s != BreakerClosed {
		t.Fatalf("a stale ticket re-opened the breaker: %v", s)
	}
}

func TestBreakerUpdateKeepsCounts(t *testing.T) {
	b := NewBreaker(BreakerSettings{FailureThreshold: 5, OpenTimeout: time.Minute})
	for i := 0; i < 3; i++ {
		b.Done(mustAllow(t, b, t0), ClassServer, t0)
	}
	b.Update(BreakerSettings{FailureThreshold: 3, OpenTimeout: time.Second})
	b.Done(mustAllow(t, b, t0), ClassServer, t0)
	if s := b.State(t0); s != BreakerOpen {
		t.Fatalf("lowered threshold with 4 failures counted: %v, want open", s)
	}
	if s := b.State(t0.Add(time.Second)); s != BreakerHalfOpen {
		t.Fatalf("new timeout not applied: %v", s)
	}
}

func TestBreakerConcurrentFailuresOpenOnce(t *testing.T) {
	b := NewBreaker(BreakerSettings{FailureThreshold: 10, OpenTimeout: time.Hour})
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 200; i++ {
				if tk, ok := b.Allow(t0); ok {
					b.Done(tk, ClassServer, t0)
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
	if s := b.State(t0); s != BreakerOpen {
		t.Fatalf("state %v, want open", s)
	}
	// Exactly one transition: closed(gen 1) → open(gen 2).
	if w := b.word.Load(); w>>2 != 2 {
		t.Fatalf("generation %d after racing failures, want 2 (opened once)", w>>2)
	}
}
