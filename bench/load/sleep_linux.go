//go:build linux

package load

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleeper sleeps with a timerfd waited on through the Go network
// poller. A plain timer is not precise enough for open-loop pacing: when a
// Go P has nothing to run it waits in epoll_wait, whose timeout is in whole
// milliseconds, so a timer due in 40 µs fires up to ~1 ms late, and the
// requests behind it go out in a burst. A timerfd makes the epoll_wait
// itself return at the due time. Not safe for concurrent use: one per
// worker.
type preciseSleeper struct {
	f *os.File // nil: fall back to sleepCtx
}

func newPreciseSleeper() *preciseSleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &preciseSleeper{}
	}
	return &preciseSleeper{f: os.NewFile(uintptr(fd), "timerfd")}
}

// sleep waits d (d > 0); false when ctx ended first. Waits longer than
// maxPrecise use an ordinary timer (so cancellation is prompt).
func (s *preciseSleeper) sleep(w *worker, d time.Duration) bool {
	if s.f == nil || d > maxPrecise {
		return sleepCtx(w.r.ctx, d)
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(int(s.f.Fd()), 0, &spec, nil); err != nil {
		return sleepCtx(w.r.ctx, d)
	}
	var buf [8]byte
	if _, err := s.f.Read(buf[:]); err != nil {
		return sleepCtx(w.r.ctx, d)
	}
	return w.r.ctx.Err() == nil
}

func (s *preciseSleeper) close() {
	if s.f != nil {
		_ = s.f.Close()
	}
}
