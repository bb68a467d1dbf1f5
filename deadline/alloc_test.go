//go:build !race

package deadline

import (
	"testing"
	"time"
)

// Setting a deadline, armed or skipped, allocates nothing: it runs several
// times per request.
func TestConnDeadlineAllocsZero(t *testing.T) {
	c, _ := pair(t)
	far := time.Now().Add(time.Hour)
	if a := testing.AllocsPerRun(1000, func() {
		c.SetReadDeadline(far)                        //nolint:errcheck
		c.SetWriteDeadline(time.Now().Add(time.Hour)) //nolint:errcheck
	}); a != 0 {
		t.Fatalf("%v allocations per deadline pair", a)
	}
	i := 0
	if a := testing.AllocsPerRun(1000, func() {
		i++
		c.SetReadDeadline(far.Add(time.Duration(i) * time.Minute)) //nolint:errcheck // always armed
	}); a != 0 {
		t.Fatalf("%v allocations per armed deadline", a)
	}
}
