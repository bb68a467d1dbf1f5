package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/config"
)

// Quotas in explain (docs/quotas.md): the key's limits, and each member's
// own limits and price for the model.

// describeLimits renders limits as "requests_per_minute 600, ..."; "" when
// none is set.
func describeLimits(l *config.Limits) string {
	var parts []string
	add := func(name string, v int64) {
		if v > 0 {
			parts = append(parts, name+" "+strconv.FormatInt(v, 10))
		}
	}
	addUSD := func(name string, v float64) {
		if v > 0 {
			parts = append(parts, name+" "+strconv.FormatFloat(v, 'f', -1, 64))
		}
	}
	add("requests_per_minute", l.RequestsPerMinute)
	add("tokens_per_minute", l.TokensPerMinute)
	add("tokens_per_day", l.TokensPerDay)
	addUSD("spend_per_day_usd", l.SpendPerDayUSD)
	addUSD("spend_per_month_usd", l.SpendPerMonthUSD)
	return strings.Join(parts, ", ")
}

// keyLimitsLine is the "limits:" line of key name: its limits and where
// they are counted; "" when it has none.
func keyLimitsLine(cfg *config.Config, name string) string {
	for i := range cfg.Auth.Keys {
		k := &cfg.Auth.Keys[i]
		if k.Name != name {
			continue
		}
		d := describeLimits(&k.Limits)
		if d == "" {
			return ""
		}
		return fmt.Sprintf("limits: %s (counted in the %s store; over a rate: 429 key_rate_limited, over a budget: 429 key_budget_exceeded)", d, cfg.Quotas.Store)
	}
	return ""
}

// memberQuota is the suffix of a member line: its own limits and its
// price for model, when it has them.
func memberQuota(t *config.Target, model string) string {
	var out string
	if d := describeLimits(&t.Limits); d != "" {
		out += "; own limits: " + d + " (skipped when out of room)"
	}
	if len(t.Prices) > 0 {
		if p, ok := priceFor(t.Prices, model); ok {
			usd := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
			out += fmt.Sprintf("; price per 1M tokens: input $%s, output $%s, cache read $%s, cache write $%s",
				usd(p.Input), usd(p.Output), usd(p.CacheReadUSD()), usd(p.CacheWriteUSD()))
		} else {
			out += "; no price for this model"
		}
	}
	return out
}

// priceFor is the price of model: an exact id, else the longest prefix*.
func priceFor(prices map[string]config.Price, model string) (config.Price, bool) {
	if p, ok := prices[model]; ok {
		return p, true
	}
	best, found := -1, config.Price{}
	for k, p := range prices {
		if stem, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(model, stem) && len(stem) > best {
			best, found = len(stem), p
		}
	}
	return found, best >= 0
}
