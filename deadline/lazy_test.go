package deadline

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestLazySkip(t *testing.T) {
	now := time.Now()
	var l Lazy
	if l.Skip(now.Add(time.Minute)) {
		t.Fatal("skipped with nothing armed")
	}
	l.Armed(now.Add(time.Minute))
	cases := []struct {
		name string
		t    time.Time
		skip bool
	}{
		{"the same deadline", now.Add(time.Minute), true},
		{"later by far less than 1/64 of a minute", now.Add(time.Minute + 100*time.Millisecond), true},
		{"later by more than 1/64 of a minute", now.Add(time.Minute + 2*time.Second), false},
		{"earlier", now.Add(time.Minute - time.Millisecond), false},
		{"zero: clear", time.Time{}, false},
		{"centuries later", now.Add(200 * 365 * 24 * time.Hour), false},
	}
	for _, c := range cases {
		if got := l.Skip(c.t); got != c.skip {
			t.Errorf("%s: Skip = %v, want %v", c.name, got, c.skip)
		}
	}
	l.Armed(time.Time{})
	if l.Skip(now.Add(time.Minute)) {
		t.Fatal("skipped after a zero deadline was armed")
	}
	l.Armed(now.Add(time.Minute))
	l.Forget()
	if l.Skip(now.Add(time.Minute)) {
		t.Fatal("skipped after Forget")
	}
	// An armed deadline that has passed (it fired) is re-armed.
	l.Armed(time.Now().Add(time.Millisecond))
	time.Sleep(2 * time.Millisecond)
	if l.Skip(time.Now().Add(time.Millisecond)) {
		t.Fatal("skipped while the armed deadline has passed")
	}
}

// TestLazyNeverEarlyBeyondMargin drives random deadline sequences and checks
// the one promise Skip makes: whenever it leaves t unarmed, the armed
// deadline comes at or before t, and early by at most 1/63 of the time left
// until the armed one (so at most 1/64 of the time until t).
func TestLazyNeverEarlyBeyondMargin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var l Lazy
	for i := 0; i < 100000; i++ {
		now := time.Now()
		var d time.Time
		switch r.IntN(8) {
		case 0:
			d = time.Time{}
		case 1:
			d = now.Add(-time.Duration(r.IntN(1000)) * time.Millisecond)
		default:
			d = now.Add(time.Duration(r.Int64N(int64(2 * time.Minute))))
		}
		armed := l.at
		if l.Skip(d) {
			if armed.IsZero() || d.IsZero() || armed.After(d) {
				t.Fatalf("skipped %v with %v armed", d, armed)
			}
			if late, left := d.Sub(armed), time.Until(armed); 63*late > left+time.Millisecond {
				t.Fatalf("skipped a deadline %v later than the armed one, %v before it fires", late, left)
			}
			continue
		}
		l.Armed(d)
	}
}

// TestOnMono: a deadline's place on the Mono clock, taken without reading
// a clock, is where reading one would put it.
func TestOnMono(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, time.Minute, -time.Second} {
		want := Mono() + int64(d)
		got := onMono(time.Now().Add(d))
		if diff := time.Duration(got - want); diff < -time.Millisecond || diff > time.Millisecond {
			t.Errorf("%v ahead: off by %v", d, diff)
		}
	}
}

// SetAt decides with the caller's clock reading as Set does with its own:
// the same deadline is left armed, an earlier one and one past the margin
// are armed, and a reading past the armed deadline (it fired) re-arms.
func TestLazySetAt(t *testing.T) {
	var l Lazy
	armed := 0
	arm := func(time.Time) error { armed++; return nil }
	now := Mono()
	at := time.Now().Add(time.Minute)
	for i, c := range []struct {
		t    time.Time
		now  int64
		arms bool
	}{
		{at, now, true}, // nothing armed yet
		{at.Add(100 * time.Millisecond), now, false},                // within 1/64 of a minute
		{at.Add(-time.Millisecond), now, true},                      // earlier
		{at.Add(2 * time.Second), now, true},                        // past the margin
		{at.Add(2 * time.Second), now + int64(2*time.Minute), true}, // the armed one has fired
	} {
		before := armed
		if err := l.SetAt(c.t, c.now, arm); err != nil {
			t.Fatal(err)
		}
		if got := armed > before; got != c.arms {
			t.Errorf("case %d: armed = %v, want %v", i, got, c.arms)
		}
	}
}
