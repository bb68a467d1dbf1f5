package config

import (
	"fmt"
	"sort"

	"github.com/switchyard/switchyard/provider"
)

// Cached tokens (docs/quotas.md, Cached tokens): whose token limits count
// cache reads, and the lint of prices that leave the cache's out.

// CountsCacheReads reports whether the target's tokens_per_minute and
// tokens_per_day count cache reads: its limits.count_cache_reads, else as
// its provider's own quota counts them (openai, azure and gemini do;
// anthropic, bedrock and vertex do not).
func (t *Target) CountsCacheReads() bool {
	if c := t.Limits.CountCacheReads; c != nil {
		return *c
	}
	p := provider.Lookup(t.Provider)
	return p != nil && p.CountsCacheReads
}

// CountsCacheReads reports whether the key's token limits count cache
// reads: its limits.count_cache_reads, false by default.
func (k *ClientKey) CountsCacheReads() bool {
	c := k.Limits.CountCacheReads
	return c != nil && *c
}

// PriceWarnings returns the lint findings about cache prices (a validate
// warning, an error with -strict): a price without cache_read, whose
// cache reads are then charged at the input price, and on a provider
// that reports cache writes apart (anthropic, bedrock, vertex) one
// without cache_write. Each is located at the price's model key.
func (c *Config) PriceWarnings() []Problem {
	var out []Problem
	for i := range c.Targets {
		t := &c.Targets[i]
		p := provider.Lookup(t.Provider)
		models := make([]string, 0, len(t.Prices))
		for m := range t.Prices {
			models = append(models, m)
		}
		sort.Strings(models)
		for _, m := range models {
			pr := t.Prices[m]
			var missing string
			switch {
			case !pr.HasCacheRead && !pr.HasCacheWrite && p != nil && p.CacheWrites:
				missing = "cache_read and cache_write: cache reads and cache writes are"
			case !pr.HasCacheRead:
				missing = "cache_read: cache reads are"
			case !pr.HasCacheWrite && p != nil && p.CacheWrites:
				missing = "cache_write: cache writes are"
			default:
				continue
			}
			line, col := pr.Line, pr.Col
			if line == 0 {
				line, col = t.Line, 0
			}
			out = append(out, Problem{File: c.File, Line: line, Col: col, Path: fmt.Sprintf("targets[%d].prices[%q]", i, m),
				Message: fmt.Sprintf("target %q prices model %q without %s charged at its input price ($%g per 1M tokens); give the provider's cache prices",
					t.VirtualKey, m, missing, pr.Input)})
		}
	}
	return out
}
