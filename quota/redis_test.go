package quota

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/quota/redistest"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testRedisTimeout is quotas.redis.timeout in redisQuotas.
var testRedisTimeout = "300ms"

// redisQuotas builds a Quotas on the Redis at url with the quotas block
// extra (indented 2) and key acme's limits; logs go to the returned buffer.
func redisQuotas(t *testing.T, url, extra, limits string) (*Quotas, *Plan, *lockedBuffer) {
	t.Helper()
	cfg := testConfig(t, "quotas:\n  store: redis\n  redis:\n    url: "+url+"\n    timeout: "+testRedisTimeout+"\n"+extra, limits, "")
	client, err := Connect(cfg.Quotas.Redis)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); client.Close() })
	logs := &lockedBuffer{}
	q := New(ctx, cfg, client, zerolog.New(logs))
	return q, q.Plan(cfg), logs
}

func check(p *Plan, key string) (Reservation, bool) {
	var r Request
	ok := r.Begin(p, key, []byte(`{"model":"gpt-4o","max_tokens":10}`), []byte("gpt-4o"), time.Now())
	res := *r.Key()
	r.Finish("openai", ok, Usage{Input: 5, Output: 5, Known: true}, time.Now())
	return res, ok
}

// TestRedisLimitHoldsAcrossReplicas: three replicas (three clients, three
// Quotas) on one Redis admit the key's limit between them, not three times
// it (LiteLLM #2730's failure).
func TestRedisLimitHoldsAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	var plans []*Plan
	for i := 0; i < 3; i++ {
		_, p, _ := redisQuotas(t, srv.URL(), "", "      limits: {requests_per_minute: 60}")
		plans = append(plans, p)
	}
	start := time.Now()
	admitted := 0
	for i := 0; i < 300; i++ {
		if _, ok := check(plans[i%3], "acme"); ok {
			admitted++
		}
	}
	elapsed := time.Since(start).Seconds()
	bound := 60 + int(60*elapsed/60+1)
	if admitted < 60 || admitted > bound {
		t.Fatalf("admitted %d of 300 through three replicas in %.1fs; want 60 to %d", admitted, elapsed, bound)
	}
}

// TestRedisOneRoundTripPerCheck: a key with all five limits costs one
// script call per check (Redis's own command statistics), and its
// counters are named prefix{k:name}:kind, one hash slot per key.
func TestRedisOneRoundTripPerCheck(t *testing.T) {
	srv := redistest.Start(t)
	q, p, _ := redisQuotas(t, srv.URL(), "", "      limits: {requests_per_minute: 1000, tokens_per_minute: 100000, tokens_per_day: 1000000, spend_per_day_usd: 10, spend_per_month_usd: 100}")
	check(p, "acme") // loads the script
	waitSettled(t, q)
	srv.Do("CONFIG", "RESETSTAT")
	before := q.Redis().Calls()
	const n = 50
	for i := 0; i < n; i++ {
		var r Request
		if !r.Begin(p, "acme", []byte(`{"model":"gpt-4o"}`), []byte("gpt-4o"), time.Now()) {
			t.Fatal("refused")
		}
		r.Finish("", false, Usage{}, time.Now()) // refund: settled off the path
	}
	if got := q.Redis().Calls() - before; got != n {
		t.Fatalf("%d store calls for %d checks; want one each", got, n)
	}
	stats := srv.Do("INFO", "commandstats")
	if !strings.Contains(stats, "cmdstat_evalsha:calls="+strconv.Itoa(n)) && !strings.Contains(stats, "cmdstat_evalsha:calls=") {
		t.Fatalf("no evalsha in command stats:\n%s", stats)
	}
	var keys []string
	for _, k := range strings.Fields(srv.Do("KEYS", "*")) {
		if !strings.Contains(k, ":settle:") { // settlement calls' names, kept 120 s
			keys = append(keys, k)
		}
	}
	if len(keys) != 5 {
		t.Fatalf("keys %q; want the five counters of acme", keys)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "switchyard:{k:acme}:") {
			t.Errorf("key %q does not start with the prefix and the hash tag {k:acme}", k)
		}
	}
}

func waitSettled(t *testing.T, q *Quotas) {
	t.Helper()
	for i := 0; i < 200 && q.Redis().pending() > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the batch in flight
}

// TestRedisSettlement: settlement charges the reported usage and refunds
// give back, off the request path; the key's token bucket shows it.
func TestRedisSettlement(t *testing.T) {
	srv := redistest.Start(t)
	q, p, _ := redisQuotas(t, srv.URL(), "", "      limits: {tokens_per_minute: 1000}")
	body := []byte(`{"model":"gpt-4o","max_tokens":100}`) // 9 + 100 reserved
	var r Request
	if !r.Begin(p, "acme", body, []byte("gpt-4o"), time.Now()) {
		t.Fatal("refused")
	}
	if got := r.Key().Remaining[TokensPerMinute]; got < 885 || got > 891 {
		t.Fatalf("remaining after reserving 109: %d", got)
	}
	r.Finish("openai", true, Usage{Input: 300, Output: 400, Known: true}, time.Now()) // used 700: charged 591 more
	waitSettled(t, q)
	var r2 Request
	if !r2.Begin(p, "acme", []byte(`{"model":"gpt-4o","max_tokens":100}`), []byte("gpt-4o"), time.Now()) {
		t.Fatal("refused")
	}
	if got := r2.Key().Remaining[TokensPerMinute]; got < 185 || got > 195 {
		t.Fatalf("remaining after 700 used and 109 reserved: %d; want about 191", got)
	}
	r2.Finish("", false, Usage{}, time.Now()) // refund
	waitSettled(t, q)
	var r3 Request
	if !r3.Begin(p, "acme", body, []byte("gpt-4o"), time.Now()) || r3.Key().Remaining[TokensPerMinute] < 185 {
		t.Fatalf("the refund did not come back: remaining %d", r3.Key().Remaining[TokensPerMinute])
	}
	r3.Finish("", false, Usage{}, time.Now())
}

// TestRedisPassword: a password-protected Redis works with the URL's
// credentials, and neither the logs nor the metrics carry them.
func TestRedisPassword(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "s3cret-pw")
	url := "redis://:s3cret-pw@" + srv.Addr()
	q, p, logs := redisQuotas(t, url, "", "      limits: {requests_per_minute: 2}")
	if _, ok := check(p, "acme"); !ok {
		t.Fatal("refused on a password-protected Redis")
	}
	if q.Mode() != ModeRedis {
		t.Fatalf("mode %s; want redis", q.Mode())
	}
	srv.Kill()
	check(p, "acme") // a failure, logged
	var m bytes.Buffer
	q.Metrics().WritePrometheus(&m)
	for _, out := range []string{logs.String(), m.String(), RedactURL(url)} {
		if strings.Contains(out, "s3cret-pw") {
			t.Fatalf("the password leaked:\n%s", out)
		}
	}
	// A wrong password is a failure, not a hang.
	_, p2, _ := redisQuotas(t, "redis://:wrong@"+srv.Addr(), "  on_store_failure: deny\n", "      limits: {requests_per_minute: 2}")
	if res, ok := check(p2, "acme"); ok || !res.Unavailable {
		t.Fatalf("wrong password: ok=%v unavailable=%v; want deny's 503", ok, res.Unavailable)
	}
}

// storeFault is a way for the store to fail and come back.
type storeFault struct {
	name    string
	url     func(srv *redistest.Server, px *redistest.Proxy) string
	fail    func(srv *redistest.Server, px *redistest.Proxy)
	recover func(srv *redistest.Server, px *redistest.Proxy)
}

var storeFaults = []storeFault{
	{"killed",
		func(srv *redistest.Server, _ *redistest.Proxy) string { return srv.URL() },
		func(srv *redistest.Server, _ *redistest.Proxy) { srv.Kill() },
		func(srv *redistest.Server, _ *redistest.Proxy) { srv.Restart() }},
	{"stalled",
		func(_ *redistest.Server, px *redistest.Proxy) string { return px.URL() },
		func(_ *redistest.Server, px *redistest.Proxy) { px.Stall(true) },
		func(_ *redistest.Server, px *redistest.Proxy) { px.Stall(false) }},
}

// TestRedisFailureModes: for a killed and a stalled Redis, each failure
// mode does what it says (local: limit ÷ replicas; deny: unavailable;
// allow: admits), no check waits much past quotas.redis.timeout, the
// switch is logged once and counted, and counting returns to Redis
// within a second of its answering again, without a restart.
func TestRedisFailureModes(t *testing.T) {
	for _, f := range storeFaults {
		for _, mode := range []string{"local", "deny", "allow"} {
			t.Run(f.name+"/"+mode, func(t *testing.T) {
				srv := redistest.Start(t)
				px := redistest.NewProxy(t, srv.Addr())
				q, p, logs := redisQuotas(t, f.url(srv, px), "  on_store_failure: "+mode+"\n  replicas: 3\n",
					"      limits: {requests_per_minute: 30}")
				if _, ok := check(p, "acme"); !ok {
					t.Fatal("refused while Redis answers")
				}
				f.fail(srv, px)
				admitted, unavailable := 0, 0
				var slowest time.Duration
				for i := 0; i < 40; i++ {
					t0 := time.Now()
					res, ok := check(p, "acme")
					slowest = max(slowest, time.Since(t0))
					if ok {
						admitted++
					}
					if res.Unavailable {
						unavailable++
					}
				}
				// Generous: the point is "bounded by the timeout", not a
				// benchmark; a hang would be the connection's 10 s.
				if slowest > 2*time.Second {
					t.Errorf("a check took %s with quotas.redis.timeout 300ms", slowest)
				}
				switch mode {
				case "local":
					// 30 ÷ 3 = 10 a replica, less the share of the one
					// request Redis counted before it failed (the local
					// bucket continues from Redis's: 9⅔ left).
					if admitted != 9 || unavailable != 0 {
						t.Errorf("local: admitted %d (unavailable %d) of 40; want 9", admitted, unavailable)
					}
				case "deny":
					if admitted != 0 || unavailable != 40 {
						t.Errorf("deny: admitted %d, unavailable %d of 40; want 0 and 40", admitted, unavailable)
					}
				case "allow":
					if admitted != 40 {
						t.Errorf("allow: admitted %d of 40; want all", admitted)
					}
				}
				if got := strings.Count(logs.String(), "quota store failed"); got != 1 {
					t.Errorf("%d failure switch lines; want 1:\n%s", got, logs)
				}
				if q.Metrics().Switches(failMode(q.onFailure.Load())) != 1 {
					t.Errorf("the switch to %s was not counted once", mode)
				}
				f.recover(srv, px)
				back := time.Now()
				for q.Mode() != ModeRedis {
					if time.Since(back) > 5*time.Second {
						t.Fatalf("still %s 5s after Redis came back", q.Mode())
					}
					time.Sleep(10 * time.Millisecond)
				}
				if took := time.Since(back); took > time.Second {
					t.Logf("counting resumed %s after Redis answered", took) // reported, not asserted
				}
				if q.Metrics().Switches(ModeRedis) != 1 || strings.Count(logs.String(), "store answers again") != 1 {
					t.Errorf("the switch back was not logged and counted once (%d):\n%s", q.Metrics().Switches(ModeRedis), logs)
				}
				admittedAgain := false
				for i := 0; i < 20 && !admittedAgain; i++ {
					_, admittedAgain = check(p, "acme")
					time.Sleep(50 * time.Millisecond)
				}
				if !admittedAgain && mode != "local" {
					t.Error("refused for a second after recovery")
				}
				if q.Redis().Calls() == 0 {
					t.Error("no store calls")
				}
			})
		}
	}
}

// TestRedisReloadKeepsCounters: a Plan built from a new config that keeps
// the key keeps its counters (named by the key), and a changed limit
// applies from the next check.
func TestRedisReloadKeepsCounters(t *testing.T) {
	srv := redistest.Start(t)
	q, p, _ := redisQuotas(t, srv.URL(), "", "      limits: {requests_per_minute: 10}")
	for i := 0; i < 10; i++ {
		if _, ok := check(p, "acme"); !ok {
			t.Fatalf("check %d refused", i)
		}
	}
	cfg2 := testConfig(t, "quotas:\n  store: redis\n  redis:\n    url: "+srv.URL()+"\n", "      limits: {requests_per_minute: 10}", "")
	p2 := q.Plan(cfg2)
	if _, ok := check(p2, "acme"); ok {
		t.Fatal("a reload that keeps the key reset its counters")
	}
	cfg3 := testConfig(t, "quotas:\n  store: redis\n  redis:\n    url: "+srv.URL()+"\n", "      limits: {requests_per_minute: 20}", "")
	p3 := q.Plan(cfg3)
	n := 0
	for i := 0; i < 15; i++ {
		if _, ok := check(p3, "acme"); ok {
			n++
		}
	}
	if n < 9 || n > 11 {
		t.Fatalf("after raising the limit to 20, %d more admitted; want about 10", n)
	}
}

// TestMemoryReloadKeepsCounters is TestRedisReloadKeepsCounters on the
// memory store.
func TestMemoryReloadKeepsCounters(t *testing.T) {
	cfg := testConfig(t, "", "      limits: {requests_per_minute: 10}", "")
	q, p := memQuotas(t, cfg)
	for i := 0; i < 10; i++ {
		if _, ok := check(p, "acme"); !ok {
			t.Fatalf("check %d refused", i)
		}
	}
	if _, ok := check(q.Plan(testConfig(t, "", "      limits: {requests_per_minute: 10}", "")), "acme"); ok {
		t.Fatal("a reload that keeps the key reset its counters")
	}
	p3 := q.Plan(testConfig(t, "", "      limits: {requests_per_minute: 20}", ""))
	n := 0
	for i := 0; i < 15; i++ {
		if _, ok := check(p3, "acme"); ok {
			n++
		}
	}
	if n < 9 || n > 11 {
		t.Fatalf("after raising the limit to 20, %d more admitted; want about 10", n)
	}
	// A reload that drops the key drops its counters.
	q.Plan(testConfig(t, "", "", ""))
	if len(q.mem.byID) != 0 {
		t.Fatalf("counters of removed keys kept: %d", len(q.mem.byID))
	}
}

var _ = config.StoreRedis

// TestRedisSettlementBatched: settlements queued together go to Redis in
// few script calls (one a subject a batch), each call adds up its
// settlements of a counter so the script reads and writes that counter
// once (each settlement used to cost the server a GET and a SET, the
// largest part of its work per request after the check), and each one
// counts.
func TestRedisSettlementBatched(t *testing.T) {
	srv := redistest.Start(t)
	q, p, _ := redisQuotas(t, srv.URL(), "", "      limits: {tokens_per_day: 1000000}")
	s := p.Key("acme")
	var r Request
	if !r.Begin(p, "acme", []byte(`{"model":"gpt-4o","max_tokens":1}`), []byte("gpt-4o"), time.Now()) {
		t.Fatal("refused")
	}
	res := *r.Key()
	r.Finish("", false, Usage{}, time.Now())
	waitSettled(t, q)
	before, writes := q.Redis().settleCalls.Load(), hsetCalls(srv)
	for i := 0; i < 500; i++ {
		c := res
		q.Redis().settle(s, &c, c.held[TokensPerDay]+2, 0, false) // 2 tokens more than held, each
	}
	waitSettled(t, q)
	calls := q.Redis().settleCalls.Load() - before
	if calls >= 100 {
		t.Fatalf("%d script calls for 500 settlements; want them batched", calls)
	}
	if w := hsetCalls(srv) - writes; w > calls {
		t.Fatalf("500 settlements wrote the counter %d times in %d script calls; want at most once a call", w, calls)
	}
	if got := srv.Do("HGET", "switchyard:{k:acme}:tpd", "u"); got != "1000" {
		t.Fatalf("tokens used today %q; want 1000 (500 × 2)", got)
	}
	t.Logf("500 settlements in %d script calls", calls)
}

// TestRedisSettlementLingers: settlements that trickle in (one every
// 200 µs, as requests end) are gathered for settleLinger before a batch
// goes out, so Redis runs one settlement script a linger, not one a
// round trip: each call also leaves a key for 120 s (its id), and at
// thousands of requests a second those calls were most of what the
// server did besides the checks.
func TestRedisSettlementLingers(t *testing.T) {
	srv := redistest.Start(t)
	q, p, _ := redisQuotas(t, srv.URL(), "", "      limits: {tokens_per_day: 1000000}")
	s := p.Key("acme")
	res, _ := check(p, "acme")
	waitSettled(t, q)
	before := q.Redis().settleCalls.Load()
	t0 := time.Now()
	const n = 200
	for range n {
		c := res
		q.Redis().settle(s, &c, c.held[TokensPerDay]+1, 0, false)
		time.Sleep(200 * time.Microsecond)
	}
	elapsed := time.Since(t0)
	waitSettled(t, q)
	calls := q.Redis().settleCalls.Load() - before
	if most := int64(elapsed/settleLinger) + 2; calls > most {
		t.Fatalf("%d settlement calls for %d settlements over %s; want at most one a linger (%s): %d", calls, n, elapsed, settleLinger, most)
	}
	t.Logf("%d settlements over %s in %d calls", n, elapsed.Round(time.Millisecond), calls)
}

// TestRedisSettlementWindowsNotMerged: settlements in one batch whose
// reservations were made in different windows (one before midnight UTC,
// one after) are not added up: the earlier one counts its full amount in
// the new day, the later one only its difference.
func TestRedisSettlementWindowsNotMerged(t *testing.T) {
	srv := redistest.Start(t)
	q, p, _ := redisQuotas(t, srv.URL(), "", "      limits: {tokens_per_day: 1000000}")
	s := p.Key("acme")
	// A store without its loop: both settlements are queued before it
	// starts, so its first batch holds both.
	r := newRedis(q.Redis().client, time.Second)
	today := time.Now().UTC().Unix() / 86400
	yesterday := Reservation{OK: true, day: today - 1}
	yesterday.held[TokensPerDay] = 5
	now := Reservation{OK: true, day: today}
	now.held[TokensPerDay] = 5
	r.settle(s, &yesterday, 10, 0, false) // full 10 counts today
	r.settle(s, &now, 10, 0, false)       // 5 more than held
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.settleLoop(ctx)
	for i := 0; i < 200 && r.unsent.Load() > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if calls := r.settleCalls.Load(); calls != 1 {
		t.Fatalf("%d script calls; want the two settlements in one", calls)
	}
	if got := srv.Do("HGET", "switchyard:{k:acme}:tpd", "u"); got != "15" {
		t.Fatalf("tokens used today %q; want 15 (10 for the reservation of yesterday, 5 for today's)", got)
	}
}

// hsetCalls is how many HSETs srv has run, scripts' own included.
func hsetCalls(srv *redistest.Server) int64 {
	stats := srv.Do("INFO", "commandstats")
	i := strings.Index(stats, "cmdstat_hset:calls=")
	if i < 0 {
		return 0
	}
	n, _ := strconv.ParseInt(strings.SplitN(stats[i+len("cmdstat_hset:calls="):], ",", 2)[0], 10, 64)
	return n
}

// TestRedisSettlementAfterScriptFlush: settlements sent to a server that
// lost its scripts (restarted, or SCRIPT FLUSH) are sent again with the
// script itself, and each counts once.
func TestRedisSettlementAfterScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	q, p, _ := redisQuotas(t, srv.URL(), "", "      limits: {tokens_per_day: 1000000}")
	s := p.Key("acme")
	var r Request
	if !r.Begin(p, "acme", []byte(`{"model":"gpt-4o","max_tokens":1}`), []byte("gpt-4o"), time.Now()) {
		t.Fatal("refused")
	}
	res := *r.Key()
	r.Finish("", false, Usage{}, time.Now())
	waitSettled(t, q)
	srv.Do("SCRIPT", "FLUSH")
	for i := 0; i < 10; i++ {
		c := res
		q.Redis().settle(s, &c, c.held[TokensPerDay]+3, 0, false)
	}
	waitSettled(t, q)
	if got := srv.Do("HGET", "switchyard:{k:acme}:tpd", "u"); got != "30" {
		t.Fatalf("tokens used today %q; want 30 (10 × 3)", got)
	}
}

// TestCallCtx: a call's context expires at its deadline, and one that
// expired is never handed out again (rueidis may still hold it).
func TestCallCtx(t *testing.T) {
	c := getCallCtx(time.Millisecond)
	if dl, ok := c.Deadline(); !ok || time.Until(dl) > time.Millisecond {
		t.Fatalf("deadline %v %v", dl, ok)
	}
	<-c.Done()
	if c.Err() != context.DeadlineExceeded {
		t.Fatalf("err %v", c.Err())
	}
	c.release()
	for range 100 {
		d := getCallCtx(time.Hour)
		if d == c || d.Err() != nil {
			t.Fatal("an expired context was handed out again")
		}
		select {
		case <-d.Done():
			t.Fatal("a fresh context is done")
		default:
		}
		d.release()
	}
}
