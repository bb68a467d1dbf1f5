package traffic

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// Every bucket's lower bound falls in it, and the nanosecond before it in
// the bucket below; the bounds grow by 1.5 and 4/3 in turn from 1 ms.
func TestBuckets(t *testing.T) {
	for i := 1; i < Buckets; i++ {
		lo := BucketLow(i)
		if Bucket(lo) != i || Bucket(lo-1) != i-1 {
			t.Errorf("bucket %d from %v: Bucket(%v) = %d, Bucket(%v) = %d", i, lo, lo, Bucket(lo), lo-1, Bucket(lo-1))
		}
	}
	want := []time.Duration{0, 500 * time.Microsecond, time.Millisecond, 1500 * time.Microsecond, 2 * time.Millisecond,
		3 * time.Millisecond, 4 * time.Millisecond, 6 * time.Millisecond, 8 * time.Millisecond}
	for i, w := range want {
		if BucketLow(i) != w {
			t.Errorf("BucketLow(%d) = %v, want %v", i, BucketLow(i), w)
		}
	}
	if got := BucketLow(Buckets - 1); got != 393216*time.Millisecond {
		t.Errorf("the last bucket starts at %v", got)
	}
	for _, d := range []time.Duration{-time.Second, 0, time.Hour, 1 << 62} {
		if b := Bucket(d); b < 0 || b >= Buckets {
			t.Errorf("Bucket(%v) = %d", d, b)
		}
	}
}

// A quantile falls in the bucket of the true one and, for a smooth
// distribution, within a sixth of it.
func TestQuantile(t *testing.T) {
	var h Histogram
	if _, ok := h.Quantile(0.5); ok {
		t.Error("an empty histogram has a median")
	}
	r := rand.New(rand.NewPCG(1, 2))
	var samples []time.Duration
	for range 20000 {
		// Log-uniform from 1 ms to 100 s, as LLM latencies spread.
		d := time.Duration(float64(time.Millisecond) * pow10(5*r.Float64()))
		samples = append(samples, d)
		h[Bucket(d)]++
	}
	slices.Sort(samples)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		exact := samples[int(q*float64(len(samples)))-1]
		got, ok := h.Quantile(q)
		if !ok || Bucket(got) != Bucket(exact) && Bucket(got) != Bucket(exact)+1 && Bucket(got) != Bucket(exact)-1 {
			t.Errorf("p%v = %v, exact %v (buckets %d and %d)", q*100, got, exact, Bucket(got), Bucket(exact))
		}
		if e := float64(got-exact) / float64(exact); e > 1.0/6 || e < -1.0/6 {
			t.Errorf("p%v = %v, exact %v: off by %.0f%%", q*100, got, exact, e*100)
		}
	}
	// Everything past the last bound: its lower bound.
	var big Histogram
	big[Buckets-1] = 3
	if got, _ := big.Quantile(0.99); got != BucketLow(Buckets-1) {
		t.Errorf("p99 of the last bucket %v", got)
	}
}

func pow10(x float64) float64 {
	v := 1.0
	for ; x >= 1; x-- {
		v *= 10
	}
	// 10^x for x in [0,1): e^(x ln 10) by a short series is enough here.
	y, term := 1.0, 1.0
	for k := 1; k < 20; k++ {
		term *= x * 2.302585092994046 / float64(k)
		y += term
	}
	return v * y
}

func TestRecordAndRead(t *testing.T) {
	born := time.Unix(1_000_000, 0)
	s := New(born)
	at := func(sec int64, n int, lat time.Duration, failed bool, tokens int64) {
		for range n {
			s.Record(1_000_000+sec, lat, failed, tokens)
		}
	}
	at(0, 3, 10*time.Millisecond, false, 5)
	at(1, 1, 2*time.Second, true, 0)
	at(9, 2, 100*time.Millisecond, false, 7)
	at(10, 4, 10*time.Millisecond, false, 1)
	at(25, 1, time.Millisecond, false, 0) // the second in progress: not read

	f := NewFrame(1_000_000+25, 40, 10)
	if f.Start != 1_000_000-10 || f.N != 4 || f.Step != 10 || f.End != 1_000_025 {
		t.Fatalf("frame %+v", f)
	}
	spans := s.Read(f, make([]Span, f.N))
	// Span 0 is before the series was born: no data at all.
	if spans[0].Seconds != 0 || spans[0].Requests != 0 {
		t.Errorf("span before birth %+v", spans[0])
	}
	s1, s2, s3 := spans[1], spans[2], spans[3]
	if s1.Seconds != 10 || s1.Requests != 6 || s1.Errors != 1 || s1.Tokens != 29 ||
		s1.Latency[Bucket(10*time.Millisecond)] != 3 || s1.Latency[Bucket(2*time.Second)] != 1 || s1.Latency[Bucket(100*time.Millisecond)] != 2 {
		t.Errorf("span 1 %+v", s1)
	}
	if s2.Seconds != 10 || s2.Requests != 4 || s2.Tokens != 4 || s2.Errors != 0 {
		t.Errorf("span 2 %+v", s2)
	}
	if s3.Seconds != 5 || s3.Requests != 0 {
		t.Errorf("span 3 (5 seconds so far; the one in progress excluded) %+v", s3)
	}

	// Seconds come round: the slot of second 0 holds second 1024 now, so
	// second 0 reads as nothing and second 1024 as its own.
	at(Seconds, 1, time.Millisecond, false, 0)
	var sp Span
	s.slots[0].read(1_000_000, &sp)
	if sp.Requests != 0 {
		t.Errorf("second 0 after its slot was reused: %+v", sp)
	}
	// A late writer for a second older than its slot's is dropped, not
	// added to the newer second.
	lost := s.Lost()
	at(0, 1, time.Millisecond, false, 0)
	var cur Span
	s.slots[uint64(1_000_000+Seconds)%Seconds].read(1_000_000+Seconds, &cur)
	if cur.Requests != 1 || s.Lost() != lost+1 {
		t.Errorf("late write: slot %+v, lost %d (was %d)", cur, s.Lost(), lost)
	}
}

func TestNewFrame(t *testing.T) {
	for _, c := range []struct {
		end          int64
		window, step int
		want         Frame
	}{
		{1000, 900, 10, Frame{Start: 100, End: 1000, Step: 10, N: 90}},
		{1005, 900, 10, Frame{Start: 110, End: 1005, Step: 10, N: 90}},
		{1005, 60, 1, Frame{Start: 945, End: 1005, Step: 1, N: 60}},
		{1005, 5000, 0, Frame{Start: 105, End: 1005, Step: 1, N: 900}},
		{1005, 3, 60, Frame{Start: 960, End: 1005, Step: 60, N: 1}},
	} {
		f := NewFrame(c.end, c.window, c.step)
		if f != c.want {
			t.Errorf("NewFrame(%d, %d, %d) = %+v, want %+v", c.end, c.window, c.step, f, c.want)
		}
		// Never more than the window, and within what the ring holds.
		if c.end-f.Start > int64(max(c.window, c.step, 1)) && c.end-f.Start > MaxWindow || c.end-f.Start >= Seconds {
			t.Errorf("%+v reaches %d seconds back", f, c.end-f.Start)
		}
	}
}

// Writers racing over second boundaries, and readers racing them: every
// request is counted once or reported lost, and a read never sees a count
// of another second.
func TestRecordConcurrent(t *testing.T) {
	s := New(time.Unix(100, 0))
	const writers, per = 8, 4000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		out := make([]Span, 10)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, sp := range s.Read(NewFrame(100+per/400+1, 10, 1), out) {
				var sum uint64
				for _, n := range sp.Latency {
					sum += n
				}
				// A second's counters are read one after another while
				// writers add to them, so they need not agree with each
				// other; but none may hold more than its second's
				// requests (a count of another second).
				if sum > writers*400 || sp.Requests > writers*400 || sp.Errors > writers*200 {
					t.Errorf("torn read %+v", sp)
					return
				}
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				s.Record(100+int64(i/400), time.Duration(w+1)*time.Millisecond, i%2 == 0, 1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-readerDone
	var total Span
	for _, sp := range s.Read(NewFrame(100+per/400, 10, 1), make([]Span, 10)) {
		total.Add(&sp)
	}
	if total.Requests+s.Lost() != writers*per || total.Tokens != total.Requests {
		t.Errorf("counted %d, lost %d, tokens %d; want %d in all", total.Requests, s.Lost(), total.Tokens, writers*per)
	}
	t.Logf("lost %d of %d", s.Lost(), writers*per)
}
