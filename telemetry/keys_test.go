package telemetry

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

func tokensOf(got map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range got {
		if strings.HasPrefix(k, famTokens) || strings.HasPrefix(k, famKeyRequests) {
			out[k] = v
		}
	}
	return out
}

func TestMetricsTokensAndKeyRequests(t *testing.T) {
	p := upstream.NewPool()
	m := quietMetrics()
	m.SetTargets([]*upstream.Target{newTarget(t, p, "openai", 1), newTarget(t, p, "bedrock", 2)})
	both := func(pr, c int64) upstream.Usage {
		return upstream.Usage{Prompt: pr, Completion: c, HasPrompt: true, HasCompletion: true}
	}
	for _, e := range []Entry{
		{Surface: router.SurfaceChat, Status: 200, Target: "openai", Key: "acme", Usage: both(8, 21)},
		{Surface: router.SurfaceChat, Status: 200, Target: "openai", Key: "acme", Usage: both(10, 1)},
		{Surface: router.SurfaceChat, Status: 200, Target: "bedrock", Key: "acme", Usage: both(3, 3)},
		{Surface: router.SurfaceEmbeddings, Status: 200, Target: "openai", Key: "beta", Usage: upstream.Usage{Prompt: 8, HasPrompt: true}},
		{Surface: router.SurfaceChat, Status: 200, Target: "openai", Usage: both(1, 2)},                                           // no auth: key ""
		{Surface: router.SurfaceChat, Status: 200, Target: "openai", Key: "beta"},                                                 // no usage: no movement
		{Surface: router.SurfaceChat, Status: 502, Target: "openai", Key: "beta", Usage: both(5, 5), Class: upstream.ClassServer}, // not a success
		{Surface: router.SurfaceChat, Status: 401, Key: ""},                                                                       // refused before any target
		{Surface: router.SurfaceChat, Status: 999, Key: "acme"},                                                                   // status out of range
	} {
		m.Finished(&e)
	}
	want := map[string]float64{
		key(famTokens, "target", "openai", "key", "acme", "kind", "prompt"):      18,
		key(famTokens, "target", "openai", "key", "acme", "kind", "completion"):  22,
		key(famTokens, "target", "bedrock", "key", "acme", "kind", "prompt"):     3,
		key(famTokens, "target", "bedrock", "key", "acme", "kind", "completion"): 3,
		key(famTokens, "target", "openai", "key", "beta", "kind", "prompt"):      8,
		key(famTokens, "target", "openai", "key", "", "kind", "prompt"):          1,
		key(famTokens, "target", "openai", "key", "", "kind", "completion"):      2,
		key(famKeyRequests, "key", "acme", "status", "200"):                      3,
		key(famKeyRequests, "key", "acme", "status", "other"):                    1,
		key(famKeyRequests, "key", "beta", "status", "200"):                      2,
		key(famKeyRequests, "key", "beta", "status", "502"):                      1,
		key(famKeyRequests, "key", "", "status", "200"):                          1,
		key(famKeyRequests, "key", "", "status", "401"):                          1,
	}
	diffSeries(t, tokensOf(switchyardSeries(t, scrape(t, m))), want)

	// A reload that drops a target drops its token series; the keys' request
	// counts stay.
	m.SetTargets([]*upstream.Target{newTarget(t, p, "openai", 1)})
	for k := range want {
		if strings.Contains(k, `target="bedrock"`) {
			delete(want, k)
		}
	}
	diffSeries(t, tokensOf(switchyardSeries(t, scrape(t, m))), want)
}

// Many keys, looked up concurrently while new ones arrive: every count
// lands on its own key.
func TestMetricsManyKeysConcurrently(t *testing.T) {
	m := quietMetrics()
	const keys, per = 2000, 3
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < keys; i++ {
				k := "key-" + strconv.Itoa((i*7+w)%keys)
				for j := 0; j < per; j++ {
					m.Finished(&Entry{Status: 200, Target: "t", Key: k,
						Usage: upstream.Usage{Prompt: 1, HasPrompt: true}})
				}
			}
		}(w)
	}
	wg.Wait()
	got := switchyardSeries(t, scrape(t, m))
	for i := 0; i < keys; i++ {
		k := "key-" + strconv.Itoa(i)
		// Key i is hit by the workers w with (j*7+w)%keys == i for some j.
		if got[key(famKeyRequests, "key", k, "status", "200")] != got[key(famTokens, "target", "t", "key", k, "kind", "prompt")] {
			t.Fatalf("%s: requests and tokens disagree", k)
		}
	}
	total := 0.0
	for k, v := range got {
		if strings.HasPrefix(k, famKeyRequests) {
			total += v
		}
	}
	if total != 4*keys*per {
		t.Fatalf("counted %v requests, want %d", total, 4*keys*per)
	}
}
