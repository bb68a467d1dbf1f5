//go:build !race

package admin

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/config"
)

// Finished runs on every request: the decision, the key's counters and
// the histories of the key and of every member called allocate nothing.
func TestRecorderFinishedAllocs(t *testing.T) {
	s, g := newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	rec := s.opts.Recorder
	rec.SetTargets([]string{"a", "b"})
	e := failoverEntry(g.Load().Targets)
	if n := testing.AllocsPerRun(1000, func() { rec.Finished(e) }); n != 0 {
		t.Errorf("Finished allocates %.1f times; want 0", n)
	}
	_, h, _ := getHistory(t, s, "window=60", time.Now().Add(time.Second))
	if ta := seriesNamed(h.Targets, "a"); ta == nil || ta.Total.Requests < 1000 || ta.Total.Errors != ta.Total.Requests {
		t.Errorf("the runs were not recorded: %+v", h.Targets)
	}
}
