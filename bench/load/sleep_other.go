//go:build !linux

package load

import "time"

// preciseSleeper is an ordinary timer sleep outside Linux (see
// sleep_linux.go for why Linux uses a timerfd).
type preciseSleeper struct{}

func newPreciseSleeper() *preciseSleeper { return &preciseSleeper{} }

func (s *preciseSleeper) sleep(w *worker, d time.Duration) bool { return sleepCtx(w.r.ctx, d) }

func (s *preciseSleeper) close() {}
