//go:build !race

package upstream

import (
	"testing"
	"time"
)

func TestBreakerAllowDoneAllocsZero(t *testing.T) {
	b := NewBreaker(BreakerSettings{FailureThreshold: 3, SuccessThreshold: 1, MaxHalfOpen: 1, OpenTimeout: time.Second})
	now := t0
	var seen [3]int
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		seen[b.State(now)]++
		class := ClassServer
		if i%5 == 4 {
			class = ClassOK
		}
		i++
		if tk, ok := b.Allow(now); ok {
			b.Done(tk, class, now)
		}
		now = now.Add(400 * time.Millisecond) // walks through open and half-open too
	})
	if allocs != 0 {
		t.Fatalf("Breaker Allow/Done allocate %v per run", allocs)
	}
	if seen[BreakerClosed] == 0 || seen[BreakerOpen] == 0 || seen[BreakerHalfOpen] == 0 {
		t.Fatalf("the run did not visit every state: %v", seen)
	}
}

func TestParkAllocsZero(t *testing.T) {
	var p Park
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		if !p.Parked(now) {
			p.ParkUntil(now.Add(time.Second))
		}
		now = now.Add(300 * time.Millisecond)
	})
	if allocs != 0 {
		t.Fatalf("Park allocates %v per run", allocs)
	}
}

func TestLimiterFastPathAllocsZero(t *testing.T) {
	l := NewLimiter(4, 4)
	allocs := testing.AllocsPerRun(1000, func() {
		if ok, _ := l.Acquire(time.Time{}, nil); ok {
			l.Release()
		}
	})
	if allocs != 0 {
		t.Fatalf("Limiter fast path allocates %v per run", allocs)
	}
}
