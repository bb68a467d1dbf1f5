//go:build !race

package traffic

import (
	"testing"
	"time"
)

// Record is on every request's path, for its key and each target called:
// it allocates nothing, in a second already claimed or a new one.
func TestRecordAllocs(t *testing.T) {
	s := New(time.Unix(1, 0))
	sec := int64(1)
	if n := testing.AllocsPerRun(1000, func() {
		s.Record(sec, 30*time.Millisecond, false, 12)
		sec++
	}); n != 0 {
		t.Errorf("Record allocates %.1f times; want 0", n)
	}
	f := NewFrame(sec, MaxWindow, 10)
	out := make([]Span, f.N)
	if n := testing.AllocsPerRun(10, func() { s.Read(f, out) }); n != 0 {
		t.Errorf("Read allocates %.1f times; want 0", n)
	}
}
