package cli

import (
	"fmt"
	"strconv"

	"github.com/switchyard/switchyard/config"
)

// estimateLine is the "estimate:" line of key name (docs/quotas.md, Cached
// tokens): how its requests are reserved before the call, whether its
// token limits count cache reads, and the largest request they admit; ""
// for a key without limits, or one the config does not have. ratio is the key's learned ratio
// when a running gateway explains (the console); ok false: the config
// alone, where it starts at 1.
func estimateLine(cfg *config.Config, name string, ratio float64, ok bool) string {
	for i := range cfg.Auth.Keys {
		k := &cfg.Auth.Keys[i]
		if k.Name != name || !k.Limits.Any() {
			continue
		}
		r := "1 (each gateway process starts at 1 and learns from this key's answers; a running one shows its own in /api/status)"
		if ok {
			r = strconv.FormatFloat(ratio, 'f', 3, 64) + " (learned by this process)"
		}
		line := fmt.Sprintf("estimate: reserves ceil(body bytes / 4 × ratio) + the completion part, ratio %s; cache reads count against its token limits: %s",
			r, yesNo(k.CountsCacheReads()))
		for _, l := range []struct {
			name, code string
			v          int64
		}{{"tokens_per_minute", "key_rate_limited", k.Limits.TokensPerMinute}, {"tokens_per_day", "key_budget_exceeded", k.Limits.TokensPerDay}} {
			if l.v > 0 {
				line += fmt.Sprintf("; a request reserving more than its %s (%d) is refused at once: 429 %s, no Retry-After", l.name, l.v, l.code)
				break
			}
		}
		return line
	}
	return ""
}
