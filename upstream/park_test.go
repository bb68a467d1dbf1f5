package upstream

import (
	"sync"
	"testing"
	"time"
)

func TestParkLazyExpiryAndMax(t *testing.T) {
	var p Park
	if p.Parked(t0) {
		t.Fatal("zero Park is parked")
	}
	p.ParkUntil(t0.Add(10 * time.Second))
	p.ParkUntil(t0.Add(3 * time.Second)) // an earlier deadline does not shorten it
	if !p.Parked(t0.Add(9 * time.Second)) {
		t.Fatal("not parked before the later deadline")
	}
	if p.Parked(t0.Add(10 * time.Second)) {
		t.Fatal("still parked at the deadline")
	}
	if r := p.Remaining(t0.Add(4 * time.Second)); r != 6*time.Second {
		t.Fatalf("Remaining = %v, want 6s", r)
	}
	if r := p.Remaining(t0.Add(time.Hour)); r != 0 {
		t.Fatalf("Remaining after expiry = %v, want 0", r)
	}
}

func TestParkConcurrentKeepsMax(t *testing.T) {
	var p Park
	var wg sync.WaitGroup
	for i := 1; i <= 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.ParkUntil(t0.Add(time.Duration(i) * time.Second))
		}()
	}
	wg.Wait()
	if got := p.until.Load(); got != t0.Add(50*time.Second).UnixNano() {
		t.Fatalf("park deadline %v, want the max", time.Unix(0, got).UTC())
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	cases := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"7", 7 * time.Second, true},
		{" 12 ", 12 * time.Second, true},
		{"0", 0, true},
		{"-3", 0, false},
		{"1.5", 0, false},
		{"abc", 0, false},
		{"99999999999999999999", time.Duration(1<<31) * time.Second, true},
		{"Mon, 30 Nov 2026 05:00:20 GMT", 20 * time.Second, true},
		{"Monday, 30-Nov-26 05:01:00 GMT", time.Minute, true},
		{"Mon Nov 30 05:00:05 2026", 5 * time.Second, true},
		{"Mon, 30 Nov 2026 04:00:00 GMT", 0, true}, // in the past
		{"Mon, 30 Nov 2026 05:00:20", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseRetryAfter([]byte(c.in), now)
		if got != c.want || ok != c.wantOK {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.wantOK)
		}
	}
}

func TestParkDuration(t *testing.T) {
	now := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                              DefaultPark,
		"garbage":                       DefaultPark,
		"2":                             2 * time.Second,
		"60":                            60 * time.Second,
		"61":                            MaxPark,
		"3600":                          MaxPark,
		"Mon, 30 Nov 2026 05:10:00 GMT": MaxPark,
		"Mon, 30 Nov 2026 05:00:30 GMT": 30 * time.Second,
	}
	for in, want := range cases {
		if got := ParkDuration([]byte(in), now); got != want {
			t.Errorf("ParkDuration(%q) = %v, want %v", in, got, want)
		}
	}
}
