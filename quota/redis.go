package quota

import (
	"context"
	"crypto/tls"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

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

// reserveScript checks and takes every limit of one subject, atomically,
// on the server's clock. KEYS are the subject's counters; ARGV holds, per
// key, kind (0 rate, 1 day budget, 2 month budget), limit and cost. It
// returns {ok, denied key index, wait µs, day, month} and, when ok, per
// key {held, room, reset µs}. The arithmetic is bucket.go's, in µs.
var reserveScript = rueidis.NewLuaScript(luaClock + `
local out = {1, 0, 0, day, month}
local newv = {}
for i = 1, #KEYS do
  local kind = tonumber(ARGV[3*i-2])
  local lim = tonumber(ARGV[3*i-1])
  local c = math.min(tonumber(ARGV[3*i]), lim)
  if kind == 0 then
    local tat = rate_tat(KEYS[i], lim)
    if tat < now then tat = now end
    local nt = tat + math.ceil(c * W / lim)
    if nt - now > W then return {0, i, nt - now - W, day, month} end
    newv[i] = nt
    out[#out+1] = c
    out[#out+1] = math.floor((W - (nt - now)) * lim / W)
    out[#out+1] = nt - now
  else
    local w = day
    if kind == 2 then w = month end
    local h = redis.call('HMGET', KEYS[i], 'w', 'u')
    local u = 0
    if tonumber(h[1]) == w then u = tonumber(h[2]) or 0 end
    if u + c > lim or (c == 0 and u >= lim) then return {0, i, -1, day, month} end
    newv[i] = u + c
    out[#out+1] = c
    out[#out+1] = lim - u - c
    out[#out+1] = 0
  end
end
for i = 1, #KEYS do
  local kind = tonumber(ARGV[3*i-2])
  if kind == 0 then
    redis.call('SET', KEYS[i], string.format('%.0f:%.0f', newv[i], tonumber(ARGV[3*i-1])), 'PX', math.ceil((newv[i] - now) / 1000) + 1000)
  else
    local w = day
    if kind == 2 then w = month end
    redis.call('HSET', KEYS[i], 'w', w, 'u', string.format('%.0f', newv[i]))
    redis.call('EXPIRE', KEYS[i], 3024000)
  end
end
return out
`)

// settleScript applies settlements, once: KEYS[1] names this call (a call
// retried after a timeout may have been applied already, by a Redis that
// was only slow, and must not count twice; the name is kept 120 s, far
// longer than a retried call can be in flight); the other KEYS are counters,
// with ARGV holding, per counter, kind, limit, delta, full and the
// reservation's window (see bucketAdjust and budgetAdjust).
var settleScript = rueidis.NewLuaScript(luaClock + `
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', 120) then return 0 end
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
        redis.call('SET', KEYS[i], string.format('%.0f:%.0f', nt, lim), 'PX', math.ceil((nt - now) / 1000) + 1000)
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
      redis.call('HSET', KEYS[i], 'w', w, 'u', string.format('%.0f', u))
      redis.call('EXPIRE', KEYS[i], 3024000)
    end
  end
end
return 1
`)

// luaClock reads the server's clock: now (µs), W (the rate window, µs),
// day (days since the epoch, UTC) and month (year × 12 + month − 1, UTC).
const luaClock = `
local t = redis.call('TIME')
local sec = tonumber(t[1])
local now = sec * 1000000 + tonumber(t[2])
local W = 60000000
local day = math.floor(sec / 86400)
local z = day + 719468
local era = math.floor(z / 146097)
local doe = z - era * 146097
local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
local y = yoe + era * 400
local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
local mp = math.floor((5 * doy + 2) / 153)
local m = mp + 3
if mp >= 10 then m = mp - 9 end
if m <= 2 then y = y + 1 end
local month = y * 12 + m - 1
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
	timeout time.Duration
	ops     chan settleOp
	// calls counts script round trips of checks (for tests and bench).
	calls atomic.Int64
	// settleCalls counts settlement script calls (one a subject a batch).
	settleCalls atomic.Int64
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

// settleOp is one queued settlement.
type settleOp struct {
	tag  string // the subject's id: its keys' hash tag
	keys []string
	args []string
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
	return &Redis{client: client, timeout: timeout, ops: make(chan settleOp, 1<<16)}
}

// Calls returns how many check round trips the store made.
func (r *Redis) Calls() int64 { return r.calls.Load() }

// reserve checks and takes s's limits; an error is a store failure.
func (r *Redis) reserve(s *Subject, tokens int64, now time.Time, res *Reservation) error {
	args := make([]string, 0, 3*len(s.kinds))
	for _, k := range s.kinds {
		args = append(args, redisKind(k), strconv.FormatInt(s.Limit[k], 10), strconv.FormatInt(cost(k, tokens), 10))
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	t0 := time.Now()
	r.calls.Add(1)
	vals, err := reserveScript.Exec(ctx, r.client, s.redisKeys, args).AsIntSlice()
	if r.observe != nil {
		r.observe(time.Since(t0))
	}
	if err != nil {
		return err
	}
	if len(vals) < 5 {
		return errors.New("quota: short reply from the reserve script")
	}
	res.day, res.month = vals[3], vals[4]
	if vals[0] != 1 {
		i := int(vals[1]) - 1
		if i < 0 || i >= len(s.kinds) {
			return errors.New("quota: bad reply from the reserve script")
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
	if len(vals) != 5+3*len(s.kinds) {
		return errors.New("quota: bad reply from the reserve script")
	}
	for i, k := range s.kinds {
		v := vals[5+3*i:]
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

// settle queues the settlement of res (see settleMem); it never blocks.
func (r *Redis) settle(s *Subject, res *Reservation, tokens, spend int64, refund bool) {
	op := settleOp{tag: s.id, args: make([]string, 0, 5*len(s.kinds))}
	for i, k := range s.kinds {
		full := settled(k, tokens, spend, refund)
		if full < 0 {
			continue
		}
		delta := full - res.held[k]
		if k.Rate() && delta == 0 {
			continue
		}
		op.keys = append(op.keys, s.redisKeys[i])
		op.args = append(op.args, redisKind(k), strconv.FormatInt(s.Limit[k], 10),
			strconv.FormatInt(delta, 10), strconv.FormatInt(full, 10), strconv.FormatInt(res.window(k), 10))
	}
	if len(op.keys) == 0 {
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

// maxBatch bounds the settlements sent in one round trip.
const maxBatch = 512

// settleLoop sends queued settlements in batches: one pipelined round trip
// a batch, with one script call per subject in it (a subject's keys share
// a hash slot, so this holds on Redis Cluster too). A call that fails is
// kept, with its id, and sent again once the store answers: an outage
// loses no settlement unless the queue overflows, and none counts twice.
func (r *Redis) settleLoop(ctx context.Context) {
	var retry []rueidis.LuaExec // failed calls, ids kept
	var retryOps []int64        // settlements in each retried call
	var batch []settleOp
	var seq uint64
	run := strconv.FormatInt(time.Now().UnixNano(), 36) // ids unique across restarts
	for {
		if len(retry) == 0 && len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case op := <-r.ops:
				batch = append(batch, op)
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
		// One call per subject, in queue order within it.
		execs, ops := retry, retryOps
		at := map[string]int{}
		for _, op := range batch {
			i, ok := at[op.tag]
			if !ok {
				i = len(execs)
				at[op.tag] = i
				seq++
				id := op.keys[0][:strings.Index(op.keys[0], "}")+1] + ":settle:" + run + "." + strconv.FormatUint(seq, 36)
				execs = append(execs, rueidis.LuaExec{Keys: []string{id}})
				ops = append(ops, 0)
			}
			ops[i]++
			execs[i].Keys = append(execs[i].Keys, op.keys...)
			execs[i].Args = append(execs[i].Args, op.args...)
		}
		batch = batch[:0]
		cctx, cancel := context.WithTimeout(ctx, max(r.timeout, 250*time.Millisecond))
		results := settleScript.ExecMulti(cctx, r.client, execs...)
		cancel()
		r.settleCalls.Add(int64(len(execs)))
		retry, retryOps = nil, nil
		for i, res := range results {
			if err := res.Error(); err != nil && !isScriptError(err) {
				retry = append(retry, execs[i])
				retryOps = append(retryOps, ops[i])
				continue
			}
			r.unsent.Add(-ops[i])
		}
		if len(retry) > 0 {
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
		}
	}
}

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
