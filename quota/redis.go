package quota

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redis/rueidis"

	"github.com/switchyard/switchyard/config"
)

// Connect returns a rueidis client for quotas.redis: redis:// or rediss://
// (TLS), with the URL's user and password. It returns a client even when
// Redis cannot be reached yet (calls fail until it can; the connection is
// retried), so a gateway starts while its store is down. The daemon builds
// one and shares it with everything kept "in the quota store".
func Connect(rc config.QuotaRedis) (rueidis.Client, error) {
	opt, err := rueidis.ParseURL(rc.URL)
	if err != nil {
		// rueidis's errors may quote the URL; ours never do.
		return nil, errors.New("quota: quotas.redis.url is not a usable redis:// or rediss:// URL")
	}
	if u, _ := url.Parse(rc.URL); u != nil && u.Scheme == "rediss" && opt.TLSConfig == nil {
		opt.TLSConfig = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	}
	// Client-side caching needs RESP3 tracking the store does not use; a
	// failed call must come back to the gateway, which decides (local,
	// deny, allow), not be retried inside the timeout.
	opt.DisableCache = true
	opt.DisableRetry = true
	opt.Dialer.Timeout = max(rc.Timeout, time.Second)
	// A connection that stops answering is dropped after this long
	// (writes and pings unanswered), so a stalled Redis is redialed.
	opt.ConnWriteTimeout = max(4*rc.Timeout, 2*time.Second)
	c, err := rueidis.NewClient(opt)
	if err == nil {
		return c, nil
	}
	// Unreachable now: a single-node client that keeps redialing.
	opt.ForceSingleClient = true
	c, _ = rueidis.NewClient(opt)
	if c == nil {
		return nil, errors.New("quota: cannot build a Redis client from quotas.redis")
	}
	return c, nil
}

// RedactURL returns u with its password replaced, for a log line.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

// reserveSource checks and takes every limit of one subject for one or
// more requests, atomically, on the server's clock: the requests of one
// batch (see combiner) in their order, as if each were its own call at
// the same instant. KEYS are the subject's counters; ARGV holds, per key,
// kind (0 rate, 1 day budget, 2 month budget), limit and cost ('t': the
// request's tokens), then each request's tokens. It returns {day, month}
// (0 when the subject has no budget), then per request {1, then per key
// held, room, reset µs} when admitted or {0, denied key index, wait µs}
// when not. The arithmetic is bucket.go's, in µs; counters are read once
// and written once a call.
var reserveSource = luaClock + `
local nk = #KEYS
local kind, lim, base, cur, nv = {}, {}, {}, {}, {}
for i = 1, nk do
  kind[i] = tonumber(ARGV[3*i-2])
  lim[i] = tonumber(ARGV[3*i-1])
  base[i] = tonumber(ARGV[3*i]) or -1
  if kind[i] ~= 0 and day == 0 then calendar() end
end
for i = 1, nk do
  if kind[i] == 0 then
    local tat = rate_tat(KEYS[i], lim[i])
    if tat < now then tat = now end
    cur[i] = tat
  else
    local w = day
    if kind[i] == 2 then w = month end
    local h = redis.call('HMGET', KEYS[i], 'w', 'u')
    local u = 0
    if tonumber(h[1]) == w then u = tonumber(h[2]) or 0 end
    cur[i] = u
  end
end
local out = {day, month}
local took = false
for j = 3*nk + 1, #ARGV do
  local tok = tonumber(ARGV[j])
  local deny, wait = 0, 0
  for i = 1, nk do
    local c = base[i]
    if c < 0 then c = tok end
    c = math.min(c, lim[i])
    if kind[i] == 0 then
      local nt = cur[i] + math.ceil(c * W / lim[i])
      if nt - now > W then deny, wait = i, nt - now - W break end
      nv[i] = nt
    else
      if cur[i] + c > lim[i] or (c == 0 and cur[i] >= lim[i]) then deny, wait = i, -1 break end
      nv[i] = cur[i] + c
    end
  end
  if deny == 0 then
    took = true
    out[#out+1] = 1
    for i = 1, nk do
      local c = base[i]
      if c < 0 then c = tok end
      out[#out+1] = math.min(c, lim[i])
      cur[i] = nv[i]
      if kind[i] == 0 then
        out[#out+1] = math.floor((W - (nv[i] - now)) * lim[i] / W)
        out[#out+1] = nv[i] - now
      else
        out[#out+1] = lim[i] - nv[i]
        out[#out+1] = 0
      end
    end
  else
    out[#out+1] = 0
    out[#out+1] = deny
    out[#out+1] = wait
  end
end
if took then
  for i = 1, nk do
    if kind[i] == 0 then
      redis.call('SET', KEYS[i], string.format(D .. ':%s', cur[i], ARGV[3*i-1]), 'PX', string.format(D, math.ceil((cur[i] - now) / 1000) + 1000))
    else
      local w = day
      if kind[i] == 2 then w = month end
      redis.call('HSET', KEYS[i], 'w', string.format(D, w), 'u', string.format(D, cur[i]))
      redis.call('EXPIRE', KEYS[i], '3024000')
    end
  end
end
return out
`

var reserveSHA = sha1Hex(reserveSource)

// settleScript applies settlements, once: KEYS[1] names this call (a call
// retried after a timeout may have been applied already, by a Redis that
// was only slow, and must not count twice; the name is kept 120 s, far
// longer than a retried call can be in flight); the other KEYS are counters,
// with ARGV holding, per counter, kind, limit, delta, full and the
// reservation's window (see bucketAdjust and budgetAdjust).
var settleSource = luaClock + `
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', 120) then return 0 end
for i = 2, #KEYS do
  if ARGV[5*i-9] ~= '0' then calendar() break end
end
for i = 2, #KEYS do
  local kind = tonumber(ARGV[5*i-9])
  local lim = tonumber(ARGV[5*i-8])
  local delta = tonumber(ARGV[5*i-7])
  local full = tonumber(ARGV[5*i-6])
  local wres = tonumber(ARGV[5*i-5])
  if kind == 0 then
    if delta ~= 0 then
      local tat = rate_tat(KEYS[i], lim)
      local nt = nil
      if delta > 0 then
        nt = math.max(tat, now) + math.ceil(delta * W / lim)
      elseif tat > now then
        nt = math.max(tat - math.floor(-delta * W / lim), now)
      end
      if nt ~= nil then
        redis.call('SET', KEYS[i], string.format(D .. ':' .. D, nt, lim), 'PX', string.format(D, math.ceil((nt - now) / 1000) + 1000))
      end
    end
  else
    local w = day
    if kind == 2 then w = month end
    local add = delta
    if w ~= wres then add = full end
    if add ~= 0 then
      local h = redis.call('HMGET', KEYS[i], 'w', 'u')
      local u = 0
      if tonumber(h[1]) == w then u = tonumber(h[2]) or 0 end
      u = math.max(u + add, 0)
      redis.call('HSET', KEYS[i], 'w', string.format(D, w), 'u', string.format(D, u))
      redis.call('EXPIRE', KEYS[i], '3024000')
    end
  end
end
return 1
`

// settleSHA is settleSource's SHA-1, for EVALSHA.
var settleSHA = sha1Hex(settleSource)

// sha1Hex is a script's SHA-1 in hex, the name EVALSHA knows it by.
func sha1Hex(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// The scripts format numbers as integers (every value is a whole number
// below 2^53) and pass strings to redis.call: Lua's own number-to-string
// is printf's "%.14g", and glibc's float formatting (with its
// multi-precision helpers, for '%.0f' too) was 6% of the server's samples
// in a profile of the check; the integer path does not show.
//
// luaClock reads the server's clock: now (µs), W (the rate window, µs),
// and, once calendar() has run, day (days since the epoch, UTC) and month
// (year × 12 + month − 1, UTC); both are 0 until then.
const luaClock = `
local t = redis.call('TIME')
local sec = tonumber(t[1])
local now = sec * 1000000 + tonumber(t[2])
local W = 60000000
-- D formats a whole number: '%d' is C's long, 64 bits where Redis runs
-- today; a 32-bit server keeps the slower '%.0f'.
local D = '%d'
if string.format(D, 2^40) ~= '1099511627776' then D = '%.0f' end
local day, month = 0, 0
-- calendar sets day and month; a script calls it only when a budget is
-- among its keys (a subject with rates alone has no use for them).
local function calendar()
  local floor = math.floor
  day = floor(sec / 86400)
  local z = day + 719468
  local era = floor(z / 146097)
  local doe = z - era * 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local m = mp + 3
  if mp >= 10 then m = mp - 9 end
  if m <= 2 then y = y + 1 end
  month = y * 12 + m - 1
end
-- rate_tat reads a bucket ("tat:limit") for limit lim: one written for
-- another limit (a reload changed it) keeps the units it owes.
local function rate_tat(key, lim)
  local v = redis.call('GET', key)
  if not v then return 0 end
  local tat, old = string.match(v, '^(%d+):(%d+)$')
  tat, old = tonumber(tat), tonumber(old)
  if not tat then return 0 end
  if old ~= lim and tat > now then
    tat = now + math.ceil((tat - now) * old / lim)
  end
  return tat
end
`

// Redis is the shared store: one script call per subject per check, on the
// server's clock, so every replica counts against the same numbers.
// Settlements are queued and sent in batches by one goroutine. Safe for
// concurrent use.
type Redis struct {
	client  rueidis.Client
	comb    combiner
	timeout time.Duration
	ops     chan settleOp
	// calls counts checks, each of which waits for one round trip (for
	// tests and bench; comb counts the batches and script calls).
	calls atomic.Int64
	// settleCalls counts settlement script calls (one a subject a batch),
	// settleTrips their round trips (one a batch, two when some needed
	// the script loaded).
	settleCalls, settleTrips atomic.Int64
	// lost counts settlements dropped because the queue was full.
	lost atomic.Int64
	// down, when set, reports that checks found the store failing (the
	// settlement loop then waits before sending again).
	down func() bool
	// flush is set by the recovery probe: send held settlements although
	// checks still count locally. unsent counts settlements queued or held.
	flush  atomic.Bool
	unsent atomic.Int64
	// observe, when set, hears each check's round-trip time.
	observe func(time.Duration)
}

// settleOp is one queued settlement: for each kind of s set in mask (bit
// i: s.kinds[i]), the change and the full amount (see settleMem), and the
// reservation's windows. A value without pointers but s, so queueing one
// allocates nothing; the settlement loop formats it.
type settleOp struct {
	s           *Subject
	mask        uint8
	delta, full [NumKinds]int64
	day, month  int64
}

// NewRedis returns a Redis store on client; calls are bounded by timeout.
// Settlement runs until ctx ends.
func NewRedis(ctx context.Context, client rueidis.Client, timeout time.Duration) *Redis {
	r := newRedis(client, timeout)
	go r.settleLoop(ctx)
	return r
}

// newRedis is NewRedis without the settlement loop (start it with go
// settleLoop once the hooks are set).
func newRedis(client rueidis.Client, timeout time.Duration) *Redis {
	return &Redis{client: client, comb: newCombiner(client, timeout), timeout: timeout, ops: make(chan settleOp, 1<<16)}
}

// Calls returns how many checks went to the store, each one round trip.
func (r *Redis) Calls() int64 { return r.calls.Load() }

// reserve checks and takes s's limits; an error is a store failure. The
// check goes out with the others that arrive with it (combiner). Its one
// allocation is rueidis's reply: the arguments are the subject's, prepared
// when the plan was built, and the batch (with the token counts' text)
// and its deadline are pooled.
func (r *Redis) reserve(s *Subject, tokens int64, now time.Time, res *Reservation) error {
	t0 := time.Now()
	r.calls.Add(1)
	a, err := r.comb.check(s, tokens)
	if r.observe != nil {
		r.observe(time.Since(t0))
	}
	if err != nil {
		return err
	}
	vals := a.vals[:a.n]
	res.day, res.month = a.day, a.month
	if vals[0] != 1 {
		i := int(vals[1]) - 1
		if i < 0 || i >= len(s.kinds) {
			return errBadReply
		}
		k := s.kinds[i]
		wait := time.Duration(vals[2]) * time.Microsecond
		if !k.Rate() {
			wait = windowEnd(now, k)
		} else if s.loc != nil {
			// A refusal says how full the bucket is too: the local
			// fallback mirrors it (see seedLocal), so a switch right
			// after a run of refusals is no burst.
			n := min(cost(k, tokens), s.Limit[k])
			s.loc.c[k].Store(now.UnixNano() + rateWindow + int64(wait) - unitsNS(n, s.Limit[k]))
			s.loc.lim[k].Store(s.local[k])
		}
		res.deny(k, wait)
		return nil
	}
	for i, k := range s.kinds {
		v := vals[1+3*i:]
		res.held[k] = v[0]
		if k.Rate() {
			res.Remaining[k], res.Reset[k] = v[1], time.Duration(v[2])*time.Microsecond
		} else {
			res.budgetRoom[k] = v[1]
		}
	}
	res.OK = true
	return nil
}

func redisKind(k Kind) string {
	switch {
	case k.Rate():
		return "0"
	case k.monthly():
		return "2"
	}
	return "1"
}

// callCtx is the context of one store call: a deadline, and a Done channel
// closed by a timer when it passes. context.WithTimeout costs four
// allocations a call (the context, its timer, its channel, the cancel
// func); a callCtx comes from a pool and goes back once its call has ended
// in a reply with its timer stopped before firing. One whose timer fired,
// or whose call failed otherwise, is left to the garbage collector:
// rueidis may still hold it (a command left queued), and its channel is
// closed for good.
type callCtx struct {
	deadline time.Time
	done     chan struct{}
	timer    *time.Timer
	expired  atomic.Bool
}

var callCtxs sync.Pool

func getCallCtx(timeout time.Duration) *callCtx {
	c, _ := callCtxs.Get().(*callCtx)
	if c == nil {
		c = &callCtx{done: make(chan struct{})}
		c.deadline = time.Now().Add(timeout)
		c.timer = time.AfterFunc(timeout, c.expire)
		return c
	}
	c.deadline = time.Now().Add(timeout)
	c.timer.Reset(timeout)
	return c
}

func (c *callCtx) expire() {
	c.expired.Store(true)
	close(c.done)
}

// release gives c back for another call, unless its deadline has passed.
func (c *callCtx) release() {
	if c.timer.Stop() { // false: expire ran or runs
		callCtxs.Put(c)
	}
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *callCtx) Done() <-chan struct{}       { return c.done }
func (c *callCtx) Value(any) any               { return nil }
func (c *callCtx) Err() error {
	if c.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

// settle queues the settlement of res (see settleMem); it never blocks and
// allocates nothing.
func (r *Redis) settle(s *Subject, res *Reservation, tokens, spend int64, refund bool) {
	op := settleOp{s: s, day: res.day, month: res.month}
	for i, k := range s.kinds {
		full := settled(k, tokens, spend, refund)
		if full < 0 {
			continue
		}
		delta := full - res.held[k]
		if k.Rate() && delta == 0 {
			continue
		}
		op.mask |= 1 << i
		op.delta[i], op.full[i] = delta, full
	}
	if op.mask == 0 {
		return
	}
	r.unsent.Add(1)
	select {
	case r.ops <- op:
	default:
		r.unsent.Add(-1)
		r.lost.Add(1)
	}
}

// maxBatch bounds the settlements sent in one round trip; settleLinger is
// how long the first one of a batch waits for others.
const (
	maxBatch     = 512
	settleLinger = 5 * time.Millisecond
)

// settleCall is one settlement script call: its keys and arguments, and
// how many queued settlements it carries. While a batch is built, sums
// holds its subject's settlements added up per counter and window.
type settleCall struct {
	keys, args []string
	ops        int64
	s          *Subject
	sums       []settleSum
}

// settleSum is the settlements of one batch for one counter (s.kinds[k])
// reserved in window w, added up: the script then reads and writes that
// counter once a batch, not once a settlement. Budgets add exactly; for a
// rate, charges and refunds that happen to cancel leave the bucket as it
// was instead of clipping a refund at a full bucket first, so the net is
// never stricter than applying them one by one (and the server's clock
// is the batch's, not each settlement's, either way).
type settleSum struct {
	k           int
	w           int64
	delta, full int64
}

// add adds one settlement of counter k, reserved in window w, to c.
func (c *settleCall) add(k int, w, delta, full int64) {
	for i := range c.sums {
		if m := &c.sums[i]; m.k == k && m.w == w {
			m.delta += delta
			m.full += full
			return
		}
	}
	c.sums = append(c.sums, settleSum{k: k, w: w, delta: delta, full: full})
}

// settleLoop sends queued settlements in batches: one pipelined round trip
// a batch, with one script call per subject in it (a subject's keys share
// a hash slot, so this holds on Redis Cluster too), its settlements added
// up per counter (settleSum). A call that fails is
// kept, with its id, and sent again once the store answers: an outage
// loses no settlement unless the queue overflows, and none counts twice.
func (r *Redis) settleLoop(ctx context.Context) {
	var (
		retry  []settleCall // failed calls, ids kept
		calls  []settleCall
		batch  []settleOp
		at     = map[*Subject]int{}
		nums   numArena
		seq    uint64
		run    = strconv.FormatInt(time.Now().UnixNano(), 36) // ids unique across restarts
		linger = time.NewTimer(time.Hour)
	)
	defer linger.Stop()
	for {
		if len(retry) == 0 && len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case op := <-r.ops:
				batch = append(batch, op)
			}
			// Let the batch gather for a moment: a settlement is off the
			// request path, and every call costs Redis a script run and
			// a key kept 120 s.
			linger.Reset(settleLinger)
			select {
			case <-ctx.Done():
				return
			case <-linger.C:
			}
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case op := <-r.ops:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		// One call per subject, in queue order within it. Retried calls
		// own their strings; the others are rebuilt each batch.
		calls = append(calls[:0], retry...)
		clear(at)
		for i := range batch {
			op := &batch[i]
			s := op.s
			j, ok := at[s]
			if !ok {
				j = len(calls)
				at[s] = j
				if j < cap(calls) {
					calls = calls[:j+1] // reuses the slices of an earlier batch's call
				} else {
					calls = append(calls, settleCall{})
				}
				seq++
				c := &calls[j]
				c.keys = append(c.keys[:0], s.redisTag+":settle:"+run+"."+strconv.FormatUint(seq, 36))
				c.args, c.ops, c.s, c.sums = c.args[:0], 0, s, c.sums[:0]
			}
			c := &calls[j]
			c.ops++
			for k := range s.kinds {
				if op.mask&(1<<k) == 0 {
					continue
				}
				w := op.day
				if s.kinds[k].monthly() {
					w = op.month
				}
				c.add(k, w, op.delta[k], op.full[k])
			}
		}
		for j := len(retry); j < len(calls); j++ {
			c := &calls[j]
			for _, m := range c.sums {
				if m.delta == 0 && (c.s.kinds[m.k].Rate() || m.full == 0) {
					continue // changes nothing (a budget's full counts when the window turned)
				}
				c.keys = append(c.keys, c.s.redisKeys[m.k])
				c.args = append(c.args, c.s.redisArgs[3*m.k], c.s.redisArgs[3*m.k+1],
					nums.str(m.delta), nums.str(m.full), nums.str(m.w))
			}
			c.s = nil // the subject may outlive its config otherwise
		}
		clear(batch) // drop the subjects
		batch = batch[:0]
		cctx, cancel := context.WithTimeout(ctx, max(r.timeout, 250*time.Millisecond))
		results := r.execSettle(cctx, calls)
		cancel()
		r.settleCalls.Add(int64(len(calls)))
		retry = nil
		for i, res := range results {
			if err := res.Error(); err != nil && !isScriptError(err) {
				retry = append(retry, calls[i])
				continue
			}
			r.unsent.Add(-calls[i].ops)
		}
		if len(retry) > 0 {
			// The retried calls keep their strings: the next ones are
			// formatted elsewhere, and calls gets a new backing array.
			nums.drop()
			calls = nil
			// Wait for the store: while it is down, sending again only
			// piles calls up in front of it.
			for wait := 0; ; wait++ {
				select {
				case <-ctx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
				if r.down == nil || !r.down() || r.flush.Load() || wait >= 50 {
					break
				}
			}
			continue
		}
		// Answered: the strings and slices are free for the next batch.
		nums.reset()
		calls = calls[:0]
	}
}

// execSettle sends calls as one pipeline (see runScripts).
func (r *Redis) execSettle(ctx context.Context, calls []settleCall) []rueidis.RedisResult {
	sc := make([]scriptCall, len(calls))
	for i, c := range calls {
		sc[i] = scriptCall{keys: c.keys, args: c.args}
	}
	r.settleTrips.Add(1)
	return runScripts(ctx, r.client, settleSHA, settleSource, sc, nil)
}

// numArena formats integers for the settlement loop's commands into one
// buffer: strings that point into it, valid until reset (after the
// commands that use them were answered) or drop (when failed commands that
// rueidis may still write keep them).
type numArena struct{ b []byte }

func (a *numArena) str(v int64) string {
	if v >= 0 && v < 100 {
		return strconv.FormatInt(v, 10) // strconv's own constants
	}
	if cap(a.b)-len(a.b) < 20 {
		a.b = make([]byte, 0, max(4096, 2*cap(a.b))) // strings in the old one keep it
	}
	n := len(a.b)
	a.b = strconv.AppendInt(a.b, v, 10)
	return unsafe.String(&a.b[n], len(a.b)-n)
}

func (a *numArena) reset() { a.b = a.b[:0] }
func (a *numArena) drop()  { a.b = nil }

// isScriptError reports an error reply other than NOSCRIPT: retrying the
// same settlement would fail the same way.
func isScriptError(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && !re.IsNoScript()
}

// ping checks that the store answers within its timeout.
func (r *Redis) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	return r.client.Do(ctx, r.client.B().Ping().Build()).Error()
}

// pending returns the settlements waiting in the queue.
func (r *Redis) pending() int { return len(r.ops) }

// flushHeld sends the held settlements (what was counted locally during an
// outage) before checks return to the store, so the store never admits
// against counters that miss them; it gives up after limit.
func (r *Redis) flushHeld(limit time.Duration) {
	r.flush.Store(true)
	defer r.flush.Store(false)
	for end := time.Now().Add(limit); r.unsent.Load() > 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
}
