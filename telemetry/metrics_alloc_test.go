//go:build !race

package telemetry

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// The request path records metrics without allocating once the series it
// touches exist.
func TestMetricsRequestPathDoesNotAllocate(t *testing.T) {
	p := upstream.NewPool()
	a := newTarget(t, p, "openai", 1)
	b := newTarget(t, p, "anthropic", 2)
	m := quietMetrics()
	m.SetTargets([]*upstream.Target{a, b})
	res := upstream.Result{Target: b, Class: upstream.ClassOK, Stream: true}
	usage := upstream.Usage{Prompt: 8, Completion: 21, HasPrompt: true, HasCompletion: true}
	// Key names as the keys helper passes them: strings of the snapshot.
	finished := []*Entry{
		{Surface: router.SurfaceChat, Status: 200, Target: "openai", Key: "acme-prod", Usage: usage},
		{Surface: router.SurfaceChat, Status: 200, Target: "anthropic", Key: "", Usage: usage},
		{Surface: router.SurfaceChat, Status: 401, Key: ""},
	}
	events := func() {
		m.Attempt(a, upstream.ClassOK, 200, 120*time.Millisecond)
		m.Attempt(b, upstream.ClassRateLimited, 429, 3*time.Millisecond)
		m.Skip(a, upstream.ClassCircuitOpen)
		m.Failover(a, upstream.ClassServer)
		m.StreamEnd(res, time.Second)
		m.Request(router.SurfaceChat, 200)
		m.Request(router.SurfaceEmbeddings, 999)
		m.Request(SurfaceNone, 404)
		m.Panic()
		for _, e := range finished {
			m.Finished(e)
		}
	}
	events() // warm-up: creates the series
	events() // and publishes the keys' read map
	if n := testing.AllocsPerRun(1000, events); n != 0 {
		t.Fatalf("observer events and Request allocate %v times per run, want 0", n)
	}
}
