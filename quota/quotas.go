package quota

import (
	"context"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/config"
)

// Error codes (docs/quotas.md; the table in docs/api.md, Errors).
const (
	CodeKeyRateLimited        = "key_rate_limited"
	CodeKeyBudgetExceeded     = "key_budget_exceeded"
	CodeTargetQuotaExhausted  = "target_quota_exhausted"
	CodeQuotaStoreUnavailable = "quota_store_unavailable"
)

// Mode is where checks are counted right now.
type Mode uint32

// Modes.
const (
	ModeMemory Mode = iota // store: memory
	ModeRedis              // the shared store answers
	ModeLocal              // the shared store is down: limit ÷ replicas in memory
	ModeDeny               // the shared store is down: 503
	ModeAllow              // the shared store is down: admit, count nothing
)

var modeNames = [...]string{"memory", "redis", "local", "deny", "allow"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "unknown"
}

// Quotas is the process's quota runtime: the store, the failure mode and
// the metrics. It outlives reloads (Plan compiles each configuration
// against it). Safe for concurrent use.
type Quotas struct {
	mem   *Memory // store: memory (nil with redis)
	redis *Redis  // store: redis (nil with memory)
	local *Memory // the local fallback's counters (redis only)
	// client is the Redis client (nil with memory).
	client rueidis.Client

	// onFailure is the failure mode of the current Plan (reloadable).
	onFailure atomic.Uint32
	// estimators are the keys' learned ratios (estimate.go), kept across
	// plans like the counters.
	estimators estimators
	// down is set while the shared store is failing; probing is set while
	// a goroutine probes it.
	down, probing atomic.Bool
	log           zerolog.Logger
	metrics       *Metrics
	now           func() time.Time
	ctx           context.Context
}

// New builds the quota runtime for cfg's quotas block: client is the
// Redis client (from Connect) for store: redis, nil for memory. Background
// work (settlement, probing) stops when ctx ends.
func New(ctx context.Context, cfg *config.Config, client rueidis.Client, log zerolog.Logger) *Quotas {
	q := &Quotas{log: log, metrics: newMetrics(), now: time.Now, ctx: ctx, client: client}
	if cfg.Quotas.Store == config.StoreRedis && client != nil {
		q.redis = newRedis(client, cfg.Quotas.Redis.Timeout)
		q.redis.observe = q.metrics.observeRoundTrip
		q.redis.down = q.down.Load
		go q.redis.settleLoop(ctx)
		q.local = NewMemory()
		q.metrics.mode.Store(uint32(ModeRedis))
	} else {
		q.mem = NewMemory()
	}
	q.metrics.dropped = func() int64 {
		if q.redis == nil {
			return 0
		}
		return q.redis.lost.Load()
	}
	q.metrics.pending = func() int {
		if q.redis == nil {
			return 0
		}
		return q.redis.pending()
	}
	return q
}

// Client returns the Redis client the store uses (nil with store: memory),
// for other state kept "in the quota store".
func (q *Quotas) Client() rueidis.Client { return q.client }

// Metrics returns the quota metrics, for /metrics.
func (q *Quotas) Metrics() *Metrics { return q.metrics }

// Redis returns the shared store (nil with store: memory).
func (q *Quotas) Redis() *Redis { return q.redis }

// Mode returns where checks are counted now.
func (q *Quotas) Mode() Mode {
	switch {
	case q.redis == nil:
		return ModeMemory
	case !q.down.Load():
		return ModeRedis
	}
	return failMode(q.onFailure.Load())
}

func failMode(v uint32) Mode {
	switch v {
	case 1:
		return ModeDeny
	case 2:
		return ModeAllow
	}
	return ModeLocal
}

// reserve checks and takes subject s's limits for a request reserving
// tokens at now, into r.
func (q *Quotas) reserve(s *Subject, tokens int64, r *Reservation, now time.Time) {
	if q.redis == nil {
		// Fast path: the memory store.
		reserveMem(s.mem, &s.Limit, s.kinds, tokens, now, r)
		r.src = srcMemory
		return
	}
	if !q.down.Load() {
		err := q.redis.reserve(s, tokens, now, r)
		if err == nil {
			r.src = srcRedis
			if r.OK {
				seedLocal(s, r, now)
			}
			return
		}
		*r = Reservation{}
		q.failed(err)
	}
	switch q.Mode() {
	case ModeDeny:
		r.Unavailable = true
	case ModeAllow:
		r.OK = true
	default:
		reserveMem(s.loc, &s.local, s.kinds, tokens, now, r)
		r.src = srcLocal
	}
}

// settle settles r for subject s at now (see settleMem).
func (q *Quotas) settle(s *Subject, r *Reservation, tokens, spend int64, refund bool, now time.Time) {
	switch r.src {
	case srcMemory:
		settleMem(s.mem, &s.Limit, s.kinds, r, tokens, spend, refund, now)
	case srcLocal:
		settleMem(s.loc, &s.local, s.kinds, r, tokens, spend, refund, now)
		if q.redis != nil && !refund {
			// Counted locally while the store was down: charged to the
			// store too (queued until it answers), so nothing admitted
			// in the outage is lost from the deployment's counters.
			c := *r
			if tokens < 0 {
				tokens = max(r.held[TokensPerMinute], r.held[TokensPerDay])
			}
			c.held = [NumKinds]int64{}
			q.redis.settle(s, &c, tokens, spend, false)
		}
	case srcRedis:
		q.redis.settle(s, r, tokens, spend, refund)
	}
	r.src = srcNone
}

// failed records a shared-store failure: the first one switches to the
// failure mode (logged once, counted) and starts probing for recovery.
func (q *Quotas) failed(err error) {
	q.metrics.storeFailure()
	if !q.down.CompareAndSwap(false, true) {
		return
	}
	m := q.Mode()
	q.metrics.setMode(m)
	q.log.Warn().Str("error", redactErr(err)).Str("mode", m.String()).
		Msg("quota store failed; counting in the failure mode until it answers again")
	if q.probing.CompareAndSwap(false, true) {
		go q.probe()
	}
}

// probeEvery is how often a failed store is asked whether it is back: the
// gateway counts on the store again within a second of its answering.
const probeEvery = 200 * time.Millisecond

// probe pings the store until it answers, then switches back to it.
func (q *Quotas) probe() {
	defer q.probing.Store(false)
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-q.ctx.Done():
			return
		case <-t.C:
		}
		if err := q.redis.ping(); err != nil {
			continue
		}
		q.redis.flushHeld(time.Second)
		q.metrics.setMode(ModeRedis)
		q.log.Info().Msg("quota store answers again; counting on it")
		q.down.Store(false)
		return
	}
}

// redactErr returns err's text without anything that looks like a URL's
// credentials (rueidis errors name addresses, never passwords, but the
// rule is cheap to keep).
func redactErr(err error) string {
	s := err.Error()
	if i := strings.Index(s, "://"); i >= 0 {
		if j := strings.IndexByte(s[i+3:], '@'); j >= 0 {
			s = s[:i+3] + "xxxxx" + s[i+3+j:]
		}
	}
	return s
}

// Plan is one configuration's compiled limits and prices. Immutable; safe
// for concurrent use. Counters are the Quotas', so a Plan built on reload
// continues the previous one's.
type Plan struct {
	q       *Quotas
	keys    map[string]*Subject
	targets map[string]*Subject
	prices  map[string]*priceTable
	// batchPrices are the targets' batch_prices (quota/batch.go).
	batchPrices map[string]*priceTable
	estimate    int64
	// estimates are the learned ratios of every configured key, by name.
	estimates map[string]*estimator
	// targetLimits is true when some target has limits.
	targetLimits bool
}

// Plan compiles cfg's limits and prices and makes cfg's failure mode
// current. Counters of keys and targets cfg no longer names are dropped.
func (q *Quotas) Plan(cfg *config.Config) *Plan {
	qc := &cfg.Quotas
	switch qc.OnStoreFailure {
	case config.OnFailureDeny:
		q.onFailure.Store(1)
	case config.OnFailureAllow:
		q.onFailure.Store(2)
	default:
		q.onFailure.Store(0)
	}
	if q.down.Load() {
		q.metrics.setMode(q.Mode())
	}
	prefix := qc.Redis.KeyPrefix
	if prefix == "" {
		prefix = config.DefaultKeyPrefix
	}
	p := &Plan{q: q, keys: map[string]*Subject{}, targets: map[string]*Subject{}, prices: map[string]*priceTable{},
		estimate: int64(qc.CompletionEstimate), estimates: map[string]*estimator{}}
	if p.estimate <= 0 {
		p.estimate = config.DefaultCompletionEstimate
	}
	keep := map[string]bool{}
	attach := func(s *Subject) {
		keep[s.id] = true
		if q.mem != nil {
			s.mem = q.mem.counters(s.id)
		}
		if q.local != nil {
			s.loc = q.local.counters(s.id)
		}
	}
	for i := range cfg.Auth.Keys {
		k := &cfg.Auth.Keys[i]
		est := q.estimators.get(k.Name)
		p.estimates[k.Name] = est
		if k.Limits.Any() {
			s := newSubject(k.Name, false, &k.Limits, k.CountsCacheReads(), qc.Replicas, prefix)
			s.est = est
			attach(s)
			p.keys[k.Name] = s
		}
	}
	q.estimators.prune(p.estimates)
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		if t.Limits.Any() {
			s := newSubject(t.VirtualKey, true, &t.Limits, t.CountsCacheReads(), qc.Replicas, prefix)
			attach(s)
			p.targets[t.VirtualKey] = s
			p.targetLimits = true
		}
		if len(t.Prices) > 0 {
			p.prices[t.VirtualKey] = newPriceTable(t.Prices)
		}
	}
	p.compileBatchPrices(cfg)
	if q.mem != nil {
		q.mem.prune(keep)
	}
	if q.local != nil {
		q.local.prune(keep)
	}
	return p
}

// Key returns key name's limits; nil when it has none.
func (p *Plan) Key(name string) *Subject { return p.keys[name] }

// EstimateRatio returns key name's learned estimate ratio (estimate.go)
// in this process; ok is false for a name the configuration has no key of.
func (p *Plan) EstimateRatio(name string) (ratio float64, ok bool) {
	e := p.estimates[name]
	if e == nil {
		return 0, false
	}
	return e.Ratio(), true
}

// Target returns target name's limits; nil when it has none.
func (p *Plan) Target(name string) *Subject { return p.targets[name] }

// Active reports whether the plan has anything to count: limits or prices.
func (p *Plan) Active() bool {
	return len(p.keys) > 0 || len(p.targets) > 0 || len(p.prices) > 0
}

// Room is a subject's current level, for the console: per kind set, its
// limit and what is left now (0 for a kind not set). Reading it takes
// nothing and makes no store call. With the Redis store it is this
// replica's view: the deployment's state as of this replica's last check
// of the subject (or, while the store is down, its local counting);
// Known is false before any.
type Room struct {
	Name   string
	Target bool
	Limit  [NumKinds]int64
	Left   [NumKinds]int64
	Known  bool
}

// Snapshot returns the current room of every key and target with limits,
// keys first, each sorted by name. Cheap: no store round trip.
func (p *Plan) Snapshot() []Room {
	out := make([]Room, 0, len(p.keys)+len(p.targets))
	add := func(m map[string]*Subject) {
		start := len(out)
		for _, s := range m {
			out = append(out, p.room(s))
		}
		sort.Slice(out[start:], func(i, j int) bool { return out[start+i].Name < out[start+j].Name })
	}
	add(p.keys)
	add(p.targets)
	return out
}

// RoomOf returns the room of key (target false) or target name; ok is
// false when it has no limits.
func (p *Plan) RoomOf(name string, target bool) (r Room, ok bool) {
	m := p.keys
	if target {
		m = p.targets
	}
	s, ok := m[name]
	if !ok {
		return Room{}, false
	}
	return p.room(s), true
}

func (p *Plan) room(s *Subject) Room {
	r := Room{Name: s.Name, Target: s.Target, Limit: s.Limit}
	now := p.q.now()
	switch {
	case s.mem != nil:
		r.Left, r.Known = roomMem(s.mem, &s.Limit, s.kinds, now), true
	case s.loc != nil:
		// The fallback counters mirror the store's last answer (see
		// seedLocal): a bucket's time to full is the same at either
		// limit, and a budget holds its share, scaled back up.
		if s.loc.c[s.kinds[0]].Load() == 0 {
			return r
		}
		day, month := windows(now)
		ns := now.UnixNano()
		for _, k := range s.kinds {
			v := s.loc.c[k].Load()
			if k.Rate() {
				r.Left[k], _ = bucketRoom(v, s.Limit[k], ns)
				continue
			}
			w := day
			if k.monthly() {
				w = month
			}
			r.Left[k] = max(s.Limit[k]-budgetUsed(v, w)*s.Limit[k]/s.local[k], 0)
		}
		r.Known = true
	}
	return r
}

// seedLocal copies what a Redis check reported into the subject's local
// fallback counters, so a switch to local counting continues from the
// deployment's state instead of a fresh burst: a rate's bucket is as full
// (a GCRA bucket's time to full is the same at limit ÷ replicas), and a
// budget has used its share, used ÷ replicas. A few atomic stores.
func seedLocal(s *Subject, r *Reservation, now time.Time) {
	if s.loc == nil {
		return
	}
	ns := now.UnixNano()
	for _, k := range s.kinds {
		if k.Rate() {
			s.loc.c[k].Store(ns + int64(r.Reset[k]))
			s.loc.lim[k].Store(s.local[k])
			continue
		}
		used := s.Limit[k] - r.budgetRoom[k]
		share := (used*s.local[k] + s.Limit[k] - 1) / s.Limit[k]
		s.loc.c[k].Store(r.window(k)<<usedBits | min(max(share, 0), usedMax))
	}
}
