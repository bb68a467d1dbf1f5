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
		{Surface: router.SurfaceMessages, Status: 200, Target: "bedrock", Key: "acme", // 2 uncached, 90 read, 8 written
			Usage: upstream.Usage{Prompt: 100, CacheRead: 90, CacheWrite: 8, Completion: 4, HasPrompt: true, HasCompletion: true}},
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
		key(famTokens, "target", "openai", "key", "acme", "kind", "input"):        18,
		key(famTokens, "target", "openai", "key", "acme", "kind", "output"):       22,
		key(famTokens, "target", "bedrock", "key", "acme", "kind", "input"):       5,
		key(famTokens, "target", "bedrock", "key", "acme", "kind", "cache_read"):  90,
		key(famTokens, "target", "bedrock", "key", "acme", "kind", "cache_write"): 8,
		key(famTokens, "target", "bedrock", "key", "acme", "kind", "output"):      7,
		key(famTokens, "target", "openai", "key", "beta", "kind", "input"):        8,
		key(famTokens, "target", "openai", "key", "", "kind", "input"):            1,
		key(famTokens, "target", "openai", "key", "", "kind", "output"):           2,
		key(famKeyRequests, "key", "acme", "status", "200"):                       4,
		key(famKeyRequests, "key", "acme", "status", "other"):                     1,
		key(famKeyRequests, "key", "beta", "status", "200"):                       2,
		key(famKeyRequests, "key", "beta", "status", "502"):                       1,
		key(famKeyRequests, "key", "", "status", "200"):                           1,
		key(famKeyRequests, "key", "", "status", "401"):                           1,
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
		if got[key(famKeyRequests, "key", k, "status", "200")] != got[key(famTokens, "target", "t", "key", k, "kind", "input")] {
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
