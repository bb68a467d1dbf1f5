package deadline

import (
	"testing"
	"time"
)

// TestRelianceMonoIsTimesMonotonicClock: Mono (runtime.nanotime) moves
// forward, and with time.Now's monotonic reading: the same interval
// measured on both differs by no more than the time between the reads
// (bounded generously here for a loaded machine). A Go release that moved
// or renamed nanotime fails to link; one that changed its clock fails here.
func TestRelianceMonoIsTimesMonotonicClock(t *testing.T) {
	for i := 0; i < 5; i++ {
		t0, m0 := time.Now(), Mono()
		time.Sleep(20 * time.Millisecond)
		m1, d := Mono(), time.Since(t0)
		if m1 <= m0 {
			t.Fatalf("Mono went from %d to %d", m0, m1)
		}
		if diff := time.Duration(m1-m0) - d; diff > -50*time.Millisecond && diff < 50*time.Millisecond {
			return
		}
	}
	t.Fatal("Mono's intervals do not follow time.Now's monotonic clock")
}
