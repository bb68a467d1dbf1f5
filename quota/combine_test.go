package quota

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/quota/redistest"
)

// testClient is a rueidis client of the Redis at url, closed with the test.
func testClient(t *testing.T, url string) rueidis.Client {
	t.Helper()
	c, err := Connect(config.QuotaRedis{URL: url, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestCombinedBatchAnswersAsOneByOne: a batch of checks of several
// subjects, interleaved, gets for each check the answer it gets when the
// same checks are sent one at a time, in the same order, on fresh
// counters: admitted or refused by the same limit, holding the same
// units, with the same room. Limits are chosen so that the time between
// the one-at-a-time calls cannot change a decision (a token is 600 ms of
// refill at most; the budgets do not refill), so only the reset times,
// which count from each call's own instant, may differ.
func TestCombinedBatchAnswersAsOneByOne(t *testing.T) {
	srv := redistest.Start(t)
	client := testClient(t, srv.URL())
	limits := []config.Limits{
		{RequestsPerMinute: 5, TokensPerMinute: 100},
		{TokensPerMinute: 100, TokensPerDay: 150},
		{RequestsPerMinute: 3, TokensPerDay: 120, SpendPerDayUSD: 1, SpendPerMonthUSD: 5},
	}
	rng := rand.New(rand.NewPCG(7, 21))
	for round := range 30 {
		var one, all []*Subject
		for i := range limits {
			name := fmt.Sprintf("s%d", i)
			one = append(one, newSubject(name, false, &limits[i], false, 1, fmt.Sprintf("one%d:", round)))
			all = append(all, newSubject(name, false, &limits[i], false, 1, fmt.Sprintf("all%d:", round)))
		}
		type req struct {
			s      int
			tokens int64
		}
		reqs := make([]req, 2+rng.IntN(maxCombined-1))
		for i := range reqs {
			reqs[i] = req{rng.IntN(len(limits)), rng.Int64N(41)}
		}

		c := newCombiner(client, 5*time.Second)
		want := make([]answer, len(reqs))
		for i, r := range reqs {
			a, err := c.check(one[r.s], r.tokens)
			if err != nil {
				t.Fatal(err)
			}
			want[i] = a
		}
		if n := c.batches.Load(); n != int64(len(reqs)) {
			t.Fatalf("one at a time: %d batches for %d checks", n, len(reqs))
		}

		c = newCombiner(client, 5*time.Second)
		b := batches.Get().(*batch)
		for _, r := range reqs {
			b.members = append(b.members, member{s: all[r.s], tokens: r.tokens})
		}
		b.refs.Store(int32(len(b.members)))
		c.send(b, getCallCtx(5*time.Second))
		used := map[int]bool{}
		for _, r := range reqs {
			used[r.s] = true
		}
		if c.batches.Load() != 1 || c.scripts.Load() != int64(len(used)) {
			t.Fatalf("batched: %d batches, %d script calls; want 1 and one per subject (%d)", c.batches.Load(), c.scripts.Load(), len(used))
		}
		for i, r := range reqs {
			got, err := b.take(i)
			if err != nil {
				t.Fatalf("round %d check %d: %v", round, i, err)
			}
			w := want[i]
			if got.n != w.n || got.day != w.day || got.month != w.month {
				t.Fatalf("round %d check %d (subject %d, %d tokens): batched %+v, one at a time %+v", round, i, r.s, r.tokens, got, w)
			}
			s := one[r.s]
			for k := 0; k < got.n; k++ {
				reset := got.vals[0] == 1 && k > 0 && (k-1)%3 == 2 && s.kinds[(k-1)/3].Rate()
				wait := got.vals[0] == 0 && k == 2 && s.kinds[got.vals[1]-1].Rate()
				if reset || wait {
					if d := got.vals[k] - w.vals[k]; d < -1e6 || d > 1e6 {
						t.Fatalf("round %d check %d: µs value %d: %d batched, %d one at a time", round, i, k, got.vals[k], w.vals[k])
					}
					continue
				}
				if got.vals[k] != w.vals[k] {
					t.Fatalf("round %d check %d (subject %d, %d tokens): batched %v, one at a time %v", round, i, r.s, r.tokens, got.vals[:got.n], w.vals[:w.n])
				}
			}
		}
	}
}

// TestCombinedChecksJoinAndGetTheirOwn: checks that arrive while a batch
// is open join it (one write, one script call per subject) and each gets
// its own answer: every goroutine has its own subject, budget and token
// count, so an answer handed to the wrong check shows as the wrong room.
// The script was flushed first, so the batch also goes through the
// NOSCRIPT path (sent again with the script itself).
func TestCombinedChecksJoinAndGetTheirOwn(t *testing.T) {
	srv := redistest.Start(t)
	client := testClient(t, srv.URL())
	r := newRedis(client, 5*time.Second)
	const n = 40
	subj := make([]*Subject, n+1)
	for i := range subj {
		l := config.Limits{RequestsPerMinute: 1000, TokensPerDay: int64(100000 + i)}
		subj[i] = newSubject(fmt.Sprintf("k%d", i), false, &l, false, 1, "p:")
	}
	srv.Do("SCRIPT", "FLUSH")

	// Open a batch as a leader would, then let n checks find it.
	c := &r.comb
	lead := batches.Get().(*batch)
	lead.members = append(lead.members, member{s: subj[0], tokens: 1})
	c.mu.Lock()
	c.open = lead
	c.mu.Unlock()
	res := make([]Reservation, n+1)
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Go(func() { errs[i] = r.reserve(subj[i], int64(i+1), time.Now(), &res[i]) })
	}
	for joined := 0; joined < n+1; {
		time.Sleep(time.Millisecond)
		c.mu.Lock()
		joined = len(lead.members)
		c.mu.Unlock()
	}
	c.lead(lead)
	if _, err := lead.take(0); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if c.batches.Load() != 1 || c.scripts.Load() != n+1 {
		t.Fatalf("%d batches, %d script calls; want 1 batch of %d calls", c.batches.Load(), c.scripts.Load(), n+1)
	}
	for i := 1; i <= n; i++ {
		if errs[i] != nil || !res[i].OK {
			t.Fatalf("check %d: %v %+v", i, errs[i], res[i])
		}
		tok := int64(i + 1)
		if res[i].held[TokensPerDay] != tok || res[i].budgetRoom[TokensPerDay] != int64(100000+i)-tok {
			t.Fatalf("check %d got held %d, room %d; want %d and %d", i, res[i].held[TokensPerDay], res[i].budgetRoom[TokensPerDay], tok, int64(100000+i)-tok)
		}
	}

	// And the same under real contention, each goroutine checking its own
	// subject again and again: the room falls by exactly its own tokens.
	batched := c.batches.Load()
	var wrong sync.Map
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			room := int64(100000+i) - int64(i+1)
			for range 20 {
				var x Reservation
				if err := r.reserve(subj[i], int64(i+1), time.Now(), &x); err != nil || !x.OK {
					wrong.Store(i, fmt.Sprint(err, x))
					return
				}
				room -= int64(i + 1)
				if x.budgetRoom[TokensPerDay] != room {
					wrong.Store(i, fmt.Sprintf("room %d, want %d", x.budgetRoom[TokensPerDay], room))
					return
				}
			}
		})
	}
	wg.Wait()
	wrong.Range(func(k, v any) bool {
		t.Errorf("subject %v: %v", k, v)
		return true
	})
	t.Logf("under contention: %d checks in %d batches", n*20, c.batches.Load()-batched)
}

// TestCombinedStallFailsTheBatchOnly: when the store stalls, every check
// of the batches in flight fails within the timeout and none hangs; once
// the store answers again, concurrent checks (batched again, from the
// same pool) each hold their own tokens, and the counter holds their sum.
func TestCombinedStallFailsTheBatchOnly(t *testing.T) {
	srv := redistest.Start(t)
	px := redistest.NewProxy(t, srv.Addr())
	client := testClient(t, px.URL())
	r := newRedis(client, 200*time.Millisecond)
	l := config.Limits{TokensPerDay: 1000000}
	before := newSubject("before", false, &l, false, 1, "p:")
	after := newSubject("after", false, &l, false, 1, "p:")
	var x Reservation
	if err := r.reserve(before, 1, time.Now(), &x); err != nil { // loads the script
		t.Fatal(err)
	}
	px.Stall(true)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slow time.Duration
	failed := 0
	for i := range 16 {
		wg.Go(func() {
			t0 := time.Now()
			var x Reservation
			err := r.reserve(before, int64(1000+i), time.Now(), &x)
			mu.Lock()
			defer mu.Unlock()
			slow = max(slow, time.Since(t0))
			if err != nil {
				failed++
			}
		})
	}
	wg.Wait()
	px.Stall(false)
	if failed != 16 || slow > 2*time.Second {
		t.Fatalf("with the store stalled: %d of 16 checks failed, the slowest took %s (timeout 200ms)", failed, slow)
	}
	for i := 0; r.ping() != nil; i++ { // a redial may take a moment
		if i == 100 {
			t.Fatal("the store does not answer after the stall")
		}
		time.Sleep(50 * time.Millisecond)
	}
	room := int64(1000000)
	var wrong []string
	for i := range 50 {
		wg.Go(func() {
			var x Reservation
			err := r.reserve(after, int64(100+i), time.Now(), &x)
			mu.Lock()
			defer mu.Unlock()
			room -= int64(100 + i)
			if err != nil || !x.OK || x.held[TokensPerDay] != int64(100+i) {
				wrong = append(wrong, fmt.Sprint(i, err, x))
			}
		})
	}
	wg.Wait()
	if len(wrong) > 0 {
		t.Fatalf("after the stall: %q", wrong)
	}
	if got := srv.Do("HGET", "p:{k:after}:tpd", "u"); got != fmt.Sprint(1000000-room) {
		t.Fatalf("used %q after the stall; want %d", got, 1000000-room)
	}
}

// TestCombinedSlotWaitCountsAgainstTimeout: with maxInflight batches out
// (their slots held here, as by batches stuck on a stalled store), the
// next check waits for a slot, and that wait is part of its timeout: it
// fails with the deadline, about one timeout after it began, and is never
// sent late with a timeout of its own.
func TestCombinedSlotWaitCountsAgainstTimeout(t *testing.T) {
	srv := redistest.Start(t)
	r := newRedis(testClient(t, srv.URL()), 300*time.Millisecond)
	l := config.Limits{TokensPerDay: 1000000}
	s := newSubject("acme", false, &l, false, 1, "p:")
	for range maxInflight {
		r.comb.slots <- struct{}{}
	}
	type result struct {
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		var x Reservation
		t0 := time.Now()
		err := r.reserve(s, 1, time.Now(), &x)
		done <- result{err, time.Since(t0)}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a check waiting for a slot did not give up at its deadline")
	}
	if !errors.Is(res.err, context.DeadlineExceeded) || res.took < 250*time.Millisecond || r.comb.batches.Load() != 0 {
		t.Fatalf("a check behind %d batches out: %v after %s, %d batches sent; want the deadline after about 300ms, nothing sent", maxInflight, res.err, res.took, r.comb.batches.Load())
	}
	for range maxInflight {
		<-r.comb.slots
	}
	var x Reservation
	if err := r.reserve(s, 1, time.Now(), &x); err != nil || !x.OK {
		t.Fatalf("with the slots free again: %v %+v", err, x)
	}
}
