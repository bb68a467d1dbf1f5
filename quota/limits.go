package quota

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/config"
)

// Kind is one kind of limit.
type Kind uint8

// Limit kinds. Rates are token buckets; the others are UTC calendar budgets.
const (
	RequestsPerMinute Kind = iota
	TokensPerMinute
	TokensPerDay
	SpendPerDay
	SpendPerMonth
	NumKinds
)

var kindNames = [NumKinds]string{"requests_per_minute", "tokens_per_minute", "tokens_per_day", "spend_per_day_usd", "spend_per_month_usd"}

// kindSuffix names a kind in Redis keys: short, and stable across versions
// (a rename would orphan counters).
var kindSuffix = [NumKinds]string{"rpm", "tpm", "tpd", "spd", "spm"}

// String returns the limit's config name, as in metrics and errors.
func (k Kind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return "unknown"
}

// Rate reports whether k is a per-minute token bucket (else a budget).
func (k Kind) Rate() bool { return k == RequestsPerMinute || k == TokensPerMinute }

// Spend reports whether k counts micro-USD.
func (k Kind) Spend() bool { return k == SpendPerDay || k == SpendPerMonth }

// monthly reports whether k's window is a calendar month (else a day).
func (k Kind) monthly() bool { return k == SpendPerMonth }

// MicroUSD is one millionth of a US dollar: spend is counted in integers.
const MicroUSD = 1e6

// Subject is a client key's or target's compiled limits. Immutable once
// built (by a Plan); safe for concurrent use.
type Subject struct {
	// Name is the key's or target's name, the label in metrics.
	Name string
	// Target is true for a target, false for a client key.
	Target bool
	// Limit[k] is the limit of kind k (spend in micro-USD); 0 = none.
	Limit [NumKinds]int64
	// local[k] is Limit[k] ÷ replicas (at least 1 where Limit[k] > 0):
	// what this replica enforces while the shared store is down.
	local [NumKinds]int64
	// kinds are the kinds set, in Kind order.
	kinds []Kind
	// cacheReads is count_cache_reads: the token kinds count cache reads.
	cacheReads bool
	// est is a key's learned estimate (nil for a target).
	est *estimator
	// id is the counters' name: "k:"+Name or "t:"+Name.
	id string
	// redisKeys[i] is the Redis key of kinds[i]: prefix{id}:suffix, so a
	// subject's counters share one Redis Cluster hash slot.
	redisKeys []string
	// redisTag is prefix{id}, the keys' common start; redisArgs holds, per
	// kinds[i], the scripts' first arguments: kind (see redisKind), limit
	// and the cost of a request ("t" for the token kinds: each request's
	// tokens follow the triples), formatted once, not per call.
	redisTag  string
	redisArgs []string
	// mem and loc are this subject's counters in the memory store and in
	// the local fallback store; nil when that store is not in use.
	mem, loc *counters
}

// Kinds returns the kinds of limit the subject has, in Kind order.
func (s *Subject) Kinds() []Kind { return s.kinds }

// HasRates reports whether the subject has a per-minute limit.
func (s *Subject) HasRates() bool {
	return s.Limit[RequestsPerMinute] > 0 || s.Limit[TokensPerMinute] > 0
}

// CountsCacheReads reports whether the subject's token limits count cache
// reads (its count_cache_reads).
func (s *Subject) CountsCacheReads() bool { return s.cacheReads }

// tooLarge reports the token limit, tokens_per_minute then tokens_per_day,
// whose whole capacity is smaller than a reservation of tokens: such a
// request can never fit (docs/quotas.md, Cached tokens).
func (s *Subject) tooLarge(tokens int64) (Kind, bool) {
	for _, k := range [...]Kind{TokensPerMinute, TokensPerDay} {
		if lim := s.Limit[k]; lim > 0 && tokens > lim {
			return k, true
		}
	}
	return 0, false
}

// peekRates returns, without taking anything, what the subject's rates
// hold now and the time until each is full, as this replica sees them:
// the memory store's counters, or the local mirror of the shared store's
// last answer (a subject it has not checked yet reads as full).
func (s *Subject) peekRates(now time.Time) (left [2]int64, full [2]time.Duration) {
	c := s.mem
	if c == nil {
		c = s.loc
	}
	ns := now.UnixNano()
	for k := RequestsPerMinute; k <= TokensPerMinute; k++ {
		if s.Limit[k] <= 0 {
			continue
		}
		var tat int64
		if c != nil {
			tat = c.c[k].Load()
		}
		left[k], full[k] = bucketRoom(tat, s.Limit[k], ns)
	}
	return left, full
}

// newSubject compiles limits l for the named key (target false) or target;
// cacheReads is its count_cache_reads.
func newSubject(name string, target bool, l *config.Limits, cacheReads bool, replicas int, prefix string) *Subject {
	s := &Subject{Name: name, Target: target, cacheReads: cacheReads}
	s.Limit[RequestsPerMinute] = l.RequestsPerMinute
	s.Limit[TokensPerMinute] = l.TokensPerMinute
	s.Limit[TokensPerDay] = l.TokensPerDay
	s.Limit[SpendPerDay] = usdToMicro(l.SpendPerDayUSD)
	s.Limit[SpendPerMonth] = usdToMicro(l.SpendPerMonthUSD)
	s.id = "k:" + name
	if target {
		s.id = "t:" + name
	}
	if replicas < 1 {
		replicas = 1
	}
	for k := Kind(0); k < NumKinds; k++ {
		if s.Limit[k] <= 0 {
			continue
		}
		s.local[k] = max(s.Limit[k]/int64(replicas), 1)
		s.kinds = append(s.kinds, k)
		s.redisKeys = append(s.redisKeys, redisKey(prefix, s.id, k))
		unit := strconv.FormatInt(cost(k, 0), 10)
		if k == TokensPerMinute || k == TokensPerDay {
			unit = "t" // the request's tokens (see reserveSource)
		}
		s.redisArgs = append(s.redisArgs, redisKind(k), strconv.FormatInt(s.Limit[k], 10), unit)
	}
	s.redisTag = prefix + "{" + s.id + "}"
	return s
}

// redisKey is prefix{id}:suffix. Braces in a name cannot break the slot
// rule: every key of one id still shares the same first {…} section.
func redisKey(prefix, id string, k Kind) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(id) + 8)
	b.WriteString(prefix)
	b.WriteByte('{')
	b.WriteString(id)
	b.WriteString("}:")
	b.WriteString(kindSuffix[k])
	return b.String()
}

// usdToMicro converts dollars to micro-dollars, rounding to nearest.
func usdToMicro(usd float64) int64 {
	if usd <= 0 {
		return 0
	}
	return int64(math.Round(usd * MicroUSD))
}

// Price is a model's price in micro-USD per token (USD per 1M tokens), per
// part of the usage: uncached input, output, cache reads and cache writes
// (docs/quotas.md, Cached tokens).
type Price struct{ In, Out, CacheRead, CacheWrite float64 }

// priceOf compiles a configured price: a cache price not given is the
// input price.
func priceOf(p config.Price) Price {
	return Price{In: p.Input, Out: p.Output, CacheRead: p.CacheReadUSD(), CacheWrite: p.CacheWriteUSD()}
}

// Spend returns the cost in micro-USD of usage u at p, rounded up (spend
// is never under-counted).
func (p Price) Spend(u *Usage) int64 {
	return int64(math.Ceil(float64(u.Input)*p.In + float64(u.CacheRead)*p.CacheRead +
		float64(u.CacheWrite)*p.CacheWrite + float64(u.Output)*p.Out))
}
