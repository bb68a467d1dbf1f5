package config

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/switchyard/switchyard/router"
)

// Quotas is the quotas block (docs/quotas.md): where the counters of rate
// limits and budgets live and what happens when that store fails.
type Quotas struct {
	// Store is "memory" (default: counters in this process) or "redis"
	// (counters shared by every replica).
	Store string `yaml:"store"`
	// Redis is the shared store's connection; used when Store is "redis".
	Redis QuotaRedis `yaml:"redis"`
	// OnStoreFailure is "local" (default), "deny" or "allow".
	OnStoreFailure string `yaml:"on_store_failure"`
	// Replicas is how many replicas share each limit, for "local": each
	// enforces limit ÷ Replicas while the store is down. Default 1.
	Replicas int `yaml:"replicas"`
	// CompletionEstimate is the completion tokens reserved for a request
	// that names no maximum (and the most reserved for one that does).
	// Default 1024.
	CompletionEstimate int `yaml:"completion_estimate"`
}

// QuotaRedis is the Redis (or Valkey) connection of the shared store.
type QuotaRedis struct {
	// URL is redis://[user:pass@]host:port[/db] or rediss:// for TLS.
	// Required with store: redis. Secret (it may hold a password): never
	// logged, never quoted in a problem.
	URL string `yaml:"url"`
	// KeyPrefix starts every Redis key the gateway writes. Default
	// "switchyard:".
	KeyPrefix string `yaml:"key_prefix"`
	// Timeout bounds one store call; a slower answer is a store failure.
	// Default 50ms.
	Timeout time.Duration `yaml:"timeout"`
}

// Quota store names and failure modes.
const (
	StoreMemory = "memory"
	StoreRedis  = "redis"

	OnFailureLocal = "local"
	OnFailureDeny  = "deny"
	OnFailureAllow = "allow"
)

// Quota defaults.
const (
	DefaultKeyPrefix          = "switchyard:"
	DefaultRedisTimeout       = 50 * time.Millisecond
	DefaultCompletionEstimate = 1024
)

// Limits are a client key's or a target's rate limits and budgets. Zero
// means no limit of that kind.
type Limits struct {
	// RequestsPerMinute and TokensPerMinute are token buckets: capacity =
	// the limit, refilled continuously at the limit per 60 s.
	RequestsPerMinute int64 `yaml:"requests_per_minute"`
	TokensPerMinute   int64 `yaml:"tokens_per_minute"`
	// TokensPerDay is a calendar budget reset at 00:00 UTC.
	TokensPerDay int64 `yaml:"tokens_per_day"`
	// SpendPerDayUSD and SpendPerMonthUSD are calendar budgets in USD
	// (reset at 00:00 UTC and on the first of the month, UTC).
	SpendPerDayUSD   float64 `yaml:"spend_per_day_usd"`
	SpendPerMonthUSD float64 `yaml:"spend_per_month_usd"`
	// CountCacheReads counts cache reads against TokensPerMinute and
	// TokensPerDay; nil = the default: false for a key, the provider's
	// own way for a target (docs/quotas.md, Cached tokens).
	CountCacheReads *bool `yaml:"count_cache_reads"`
}

// Any reports whether some limit is set (count_cache_reads is not one).
func (l *Limits) Any() bool {
	return l.RequestsPerMinute > 0 || l.TokensPerMinute > 0 || l.TokensPerDay > 0 || l.Spend()
}

// Spend reports whether a spend budget is set.
func (l *Limits) Spend() bool { return l.SpendPerDayUSD > 0 || l.SpendPerMonthUSD > 0 }

// Rates reports whether a per-minute rate is set (these limits get the
// x-ratelimit-* headers).
func (l *Limits) Rates() bool { return l.RequestsPerMinute > 0 || l.TokensPerMinute > 0 }

// Price is a model's price in USD per 1M tokens (docs/quotas.md, Cached
// tokens).
type Price struct {
	// Input is uncached input, Output output (reasoning included).
	Input  float64 `yaml:"input"`
	Output float64 `yaml:"output"`
	// CacheRead and CacheWrite price the input read from and written to
	// the provider's prompt cache; when absent (HasCacheRead,
	// HasCacheWrite false) those tokens are charged at Input.
	CacheRead  float64 `yaml:"cache_read"`
	CacheWrite float64 `yaml:"cache_write"`
	// HasCacheRead and HasCacheWrite say which cache prices were given.
	HasCacheRead  bool `yaml:"-"`
	HasCacheWrite bool `yaml:"-"`
	// Line and Col locate the price's model key in the file (0 if unknown).
	Line, Col int `yaml:"-"`
}

// CacheReadUSD returns the price of a cache read: CacheRead, else Input.
func (p Price) CacheReadUSD() float64 {
	if p.HasCacheRead {
		return p.CacheRead
	}
	return p.Input
}

// CacheWriteUSD returns the price of a cache write: CacheWrite, else Input.
func (p Price) CacheWriteUSD() float64 {
	if p.HasCacheWrite {
		return p.CacheWrite
	}
	return p.Input
}

var (
	quotasKeys     = []string{"store", "redis", "on_store_failure", "replicas", "completion_estimate"}
	quotaRedisKeys = []string{"url", "key_prefix", "timeout"}
	limitsKeys     = []string{"requests_per_minute", "tokens_per_minute", "tokens_per_day", "spend_per_day_usd", "spend_per_month_usd", "count_cache_reads"}
	priceKeys      = []string{"input", "output", "cache_read", "cache_write"}
)

// maxLimit bounds every count limit: far above any real quota, and low
// enough that the stores' arithmetic (nanoseconds × units) cannot overflow.
const maxLimit = 1 << 40

// maxUSD bounds spend limits and prices (USD).
const maxUSD = 1e9

// decodeQuotas is phase 1 for the quotas block, with its defaults.
func (d *decoder) decodeQuotas(n ast.Node, cfg *Config) {
	q := &cfg.Quotas
	*q = Quotas{Store: StoreMemory, OnStoreFailure: OnFailureLocal, Replicas: 1, CompletionEstimate: DefaultCompletionEstimate,
		Redis: QuotaRedis{KeyPrefix: DefaultKeyPrefix, Timeout: DefaultRedisTimeout}}
	m := d.fields(n, "quotas", "quotas", quotasKeys...)
	d.setStr(m, "quotas", "store", &q.Store)
	d.setStr(m, "quotas", "on_store_failure", &q.OnStoreFailure)
	d.setInt(m, "quotas", "replicas", &q.Replicas)
	d.setInt(m, "quotas", "completion_estimate", &q.CompletionEstimate)
	r := d.fields(m["redis"], "quotas.redis", "quotas.redis", quotaRedisKeys...)
	d.setStr(r, "quotas.redis", "url", &q.Redis.URL)
	d.setStr(r, "quotas.redis", "key_prefix", &q.Redis.KeyPrefix)
	d.setDuration(r, "quotas.redis", "timeout", &q.Redis.Timeout)
}

// decodeLimits decodes a limits mapping at path into *l.
func (d *decoder) decodeLimits(n ast.Node, path string, l *Limits) {
	m := d.fields(n, path, "limits", limitsKeys...)
	d.setCount(m, path, "requests_per_minute", &l.RequestsPerMinute)
	d.setCount(m, path, "tokens_per_minute", &l.TokensPerMinute)
	d.setCount(m, path, "tokens_per_day", &l.TokensPerDay)
	d.setUSD(m, path, "spend_per_day_usd", &l.SpendPerDayUSD)
	d.setUSD(m, path, "spend_per_month_usd", &l.SpendPerMonthUSD)
	if d.value(m["count_cache_reads"], join(path, "count_cache_reads")) != nil {
		var b bool
		d.setBool(m, path, "count_cache_reads", &b)
		l.CountCacheReads = &b
	}
}

// decodePrices decodes a target's prices: model id or prefix* -> Price.
func (d *decoder) decodePrices(n ast.Node, path string, dst *map[string]Price) {
	r := d.value(n, path)
	if r == nil {
		return
	}
	switch r.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		d.addAt(nodePos(n), path, "got %s; want a mapping of model ids or prefix* patterns to {input: USD, output: USD, cache_read: USD, cache_write: USD} per 1M tokens", describe(r))
		return
	}
	out := map[string]Price{}
	for _, e := range d.entries(r, path, 0, true) {
		ep := path + "[" + strconv.Quote(e.key) + "]"
		d.pos[ep] = e.keyPos
		if e.key == "" || strings.TrimSpace(e.key) != e.key || strings.Contains(strings.TrimSuffix(e.key, "*"), "*") {
			d.problemf(ep, "%s is not a model id or prefix* pattern; want one such as \"gpt-4o\" or \"gpt-5*\"", quoteShort(e.key))
		}
		f := d.fields(e.val, ep, "a price", priceKeys...)
		p := Price{Line: e.keyPos.line, Col: e.keyPos.col}
		d.setUSD(f, ep, "input", &p.Input)
		d.setUSD(f, ep, "output", &p.Output)
		d.setUSD(f, ep, "cache_read", &p.CacheRead)
		d.setUSD(f, ep, "cache_write", &p.CacheWrite)
		p.HasCacheRead = d.value(f["cache_read"], join(ep, "cache_read")) != nil
		p.HasCacheWrite = d.value(f["cache_write"], join(ep, "cache_write")) != nil
		if _, ok := f["input"]; !ok {
			d.problemf(ep, "no input price; want {input: USD, output: USD} per 1M tokens")
		}
		if _, ok := f["output"]; !ok {
			d.problemf(ep, "no output price; want {input: USD, output: USD} per 1M tokens")
		}
		out[e.key] = p
	}
	*dst = out
}

// setCount decodes a count limit (1 to maxLimit).
func (d *decoder) setCount(m map[string]ast.Node, path, key string, dst *int64) {
	p := join(path, key)
	v, ok := d.integer(m[key], p)
	if !ok {
		return
	}
	if v < 1 || v > maxLimit {
		d.problemf(p, "%d is out of range; want 1 to %d, or no %s for no limit", v, int64(maxLimit), key)
		return
	}
	*dst = int64(v)
}

// setUSD decodes a non-negative amount of US dollars (an integer or a
// decimal number).
func (d *decoder) setUSD(m map[string]ast.Node, path, key string, dst *float64) {
	p, n := join(path, key), m[key]
	r := d.value(n, p)
	if r == nil {
		return
	}
	var v float64
	switch x := r.(type) {
	case *ast.FloatNode:
		v = x.Value
	case *ast.IntegerNode:
		i, ok := d.integer(n, p)
		if !ok {
			return
		}
		v = float64(i)
	case *ast.StringNode:
		s, ok := d.str(n, p, "an amount in USD")
		if !ok {
			return
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !strings.Contains(x.Value, "${") {
			d.addAt(nodePos(n), p, "got %s; want an amount in USD such as 2.50", describe(r))
			return
		}
		v = f
	default:
		d.addAt(nodePos(n), p, "got %s; want an amount in USD such as 2.50", describe(r))
		return
	}
	if math.IsNaN(v) || v < 0 || v > maxUSD {
		d.problemf(p, "%v is out of range; want 0 to %v USD", v, maxUSD)
		return
	}
	*dst = v
}

// validateQuotas is phase 4 for the quotas block, the limits and prices.
func (d *decoder) validateQuotas(cfg *Config) {
	q := &cfg.Quotas
	switch q.Store {
	case StoreMemory, StoreRedis:
	default:
		d.problemf("quotas.store", "%s is not a quota store; want memory or redis", quoteShort(q.Store))
	}
	switch q.OnStoreFailure {
	case OnFailureLocal, OnFailureDeny, OnFailureAllow:
	default:
		d.problemf("quotas.on_store_failure", "%s is not a failure mode; want local, deny or allow", quoteShort(q.OnStoreFailure))
	}
	d.intRange("quotas.replicas", q.Replicas, 1, 10000)
	d.intRange("quotas.completion_estimate", q.CompletionEstimate, 1, 10_000_000)
	if q.Redis.Timeout <= 0 || q.Redis.Timeout > 10*time.Second {
		d.problemf("quotas.redis.timeout", "%s is out of range; want above 0s and at most 10s, such as \"50ms\"", q.Redis.Timeout)
	}
	if q.Redis.KeyPrefix == "" || strings.ContainsAny(q.Redis.KeyPrefix, "{}") {
		d.problemf("quotas.redis.key_prefix", "%s is not a key prefix; want a non-empty prefix without { or }, such as \"switchyard:\"", quoteShort(q.Redis.KeyPrefix))
	}
	if q.Store == StoreRedis {
		if msg := CheckRedisURL(q.Redis.URL); msg != "" && !d.decodeBad["quotas.redis.url"] {
			d.problemf("quotas.redis.url", "%s", msg)
		}
	}
	if len(d.probs) == 0 {
		d.validateSpendPrices(cfg)
	}
}

// CheckRedisURL returns "" for a usable quotas.redis.url, else what is
// wrong. It never quotes the URL, which may hold a password.
func CheckRedisURL(s string) string {
	if s == "" {
		return "url is required with store: redis; want redis://[user:pass@]host:port[/db] or rediss:// for TLS (usually ${REDIS_URL})"
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "url is not a URL; want redis://[user:pass@]host:port[/db] or rediss:// for TLS"
	case u.Scheme != "redis" && u.Scheme != "rediss":
		return "url's scheme is not redis or rediss; want redis://[user:pass@]host:port[/db] or rediss:// for TLS"
	case u.Host == "":
		return "url has no host; want redis://[user:pass@]host:port[/db]"
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return "url's path is not a database number; want redis://host:port/0"
		}
	}
	return ""
}

// validateSpendPrices refuses a key with a spend limit that can route to a
// target and model without a price: its spend could not be counted.
func (d *decoder) validateSpendPrices(cfg *Config) {
	specs := cfg.KeySpecs()
	var spend []int
	for i := range cfg.Auth.Keys {
		if cfg.Auth.Keys[i].Limits.Spend() {
			spend = append(spend, i)
		}
	}
	if len(spend) == 0 {
		return
	}
	rules, targets := cfg.RouterSpecs()
	snap, err := router.Compile(rules, targets, 0)
	if err != nil {
		return // the router's own problems were reported already
	}
	for _, i := range spend {
		k := &cfg.Auth.Keys[i]
		seen := map[string]bool{}
		for _, r := range snap.KeyReach(&specs[i]) {
			t := &cfg.Targets[r.Target]
			if Priced(t.Prices, r.Model) {
				continue
			}
			id := t.VirtualKey + "\x00" + r.Model
			if seen[id] {
				continue
			}
			seen[id] = true
			d.problemf(join(index("auth.keys", i), "limits"), "key %q has a spend limit and can route model %s to target %q (%s), which has no price for it; want targets[%d].prices to cover %s",
				k.Name, quoteShort(r.Model), t.VirtualKey, describeReach(r.Rule), r.Target, quoteShort(r.Model))
		}
	}
}

func describeReach(rule int) string {
	if rule < 0 {
		return "the no-match fallback"
	}
	return fmt.Sprintf("strategy.conditions[%d]", rule)
}

// Priced reports whether prices covers every model id model stands for:
// an exact id, or a prefix* pattern ("*" = any model).
func Priced(prices map[string]Price, model string) bool {
	pattern := strings.HasSuffix(model, "*")
	stem := strings.TrimSuffix(model, "*")
	for k := range prices {
		if strings.HasSuffix(k, "*") {
			if strings.HasPrefix(stem, strings.TrimSuffix(k, "*")) {
				return true
			}
		} else if !pattern && k == model {
			return true
		}
	}
	return false
}
