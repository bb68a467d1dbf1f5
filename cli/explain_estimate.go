package cli

import (
	"fmt"

	"github.com/switchyard/switchyard/config"
)

// estimateLine is the "estimate:" line of key name (docs/quotas.md, Cached
// tokens): how its requests are reserved before the call, whether its
// token limits count cache reads, and the largest request they admit; ""
// for a key without limits, or one the config does not have. The ratio a
// process learns is in /api/status; from the config alone it is 1.
func estimateLine(cfg *config.Config, name string) string {
	for i := range cfg.Auth.Keys {
		k := &cfg.Auth.Keys[i]
		if k.Name != name || !k.Limits.Any() {
			continue
		}
		line := "estimate: reserves ceil(body bytes / 4 × ratio) + the completion part, ratio 1 (each gateway process starts at 1 and learns from this key's answers; a running one shows its own in /api/status); cache reads count against its token limits: " +
			yesNo(k.CountsCacheReads())
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
