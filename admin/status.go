package admin

import (
	"time"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/upstream"
)

// Status is the answer of GET /api/status (docs/console.md).
type Status struct {
	Now      time.Time    `json:"now"`
	Version  string       `json:"version"`
	Started  time.Time    `json:"started"`
	Config   ConfigStatus `json:"config"`
	Rules    []Rule       `json:"rules"`
	Fallback string       `json:"fallback"`
	Targets  []Target     `json:"targets"`
	Keys     []Key        `json:"keys"`
	// DecisionsHead is the sequence number of the newest decision.
	DecisionsHead uint64 `json:"decisions_head"`
}

// ConfigStatus is the configuration served and its reload history.
type ConfigStatus struct {
	File     string    `json:"file"`
	Hash     string    `json:"hash"`
	LoadedAt time.Time `json:"loaded_at"`
	Auth     bool      `json:"auth"`
	// Reloads are the last 20, newest first.
	Reloads []Reload `json:"reloads"`
}

// Rule is one strategy condition and its chain.
type Rule struct {
	Index int    `json:"index"`
	Line  int    `json:"line"`
	Key   string `json:"key"`
	Field string `json:"field,omitempty"`
	Value string `json:"value"`
	// Chain names the members in order.
	Chain []string `json:"chain"`
}

// Target is one target and its live state.
type Target struct {
	Name      string   `json:"name"`
	Provider  string   `json:"provider"`
	Residency string   `json:"residency"`
	Models    []string `json:"models"`
	// Circuit is "closed", "open" or "half_open" (an open breaker whose
	// timeout passed reports half_open: it would admit a probe).
	Circuit string `json:"circuit"`
	// ParkedUntil is when a 429 park ends; null when not parked.
	ParkedUntil *time.Time `json:"parked_until"`
	InFlight    int        `json:"in_flight"`
	QueueDepth  int        `json:"queue_depth"`
	// Quota is the provider quota's room; null without target limits.
	Quota *QuotaUse `json:"quota"`
}

// Key is one client key's totals since the process started.
type Key struct {
	// Name is "" for requests without a key (no auth block, or refused
	// before a key was recognized).
	Name             string `json:"name"`
	Requests         int64  `json:"requests"`
	Errors           int64  `json:"errors"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	// CacheReadTokens and CacheWriteTokens are the parts of PromptTokens
	// read from and written to the providers' prompt caches.
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// EstimateRatio is the key's learned ratio of counted input tokens to
	// ceil(body bytes / 4) in this process (docs/quotas.md, Cached
	// tokens), between 0.05 and 1; null for requests without a key and
	// without quotas.
	EstimateRatio *float64 `json:"estimate_ratio"`
	// SpendUSD is the spend of its answers since start, at the targets'
	// prices; null until an answer was priced.
	SpendUSD *float64 `json:"spend_usd"`
	// SpendDayUSD and SpendMonthUSD are the spend in the current UTC day
	// and month as its spend budgets count it; null without both budgets.
	SpendDayUSD   *float64   `json:"spend_day_usd"`
	SpendMonthUSD *float64   `json:"spend_month_usd"`
	LastSeen      *time.Time `json:"last_seen"`
	// Quota is the key's limits and use; null without limits.
	Quota *QuotaUse `json:"quota"`
}

// status builds the Status of st at now.
func (s *Server) status(st *hotpath.State, now time.Time) *Status {
	cfg := st.Config
	reloads, loadedAt := s.opts.Reloads.Snapshot()
	out := &Status{
		Now:     now.UTC(),
		Version: s.opts.Version,
		Started: s.started.UTC(),
		Config: ConfigStatus{File: cfg.File, Hash: cfg.Hash, LoadedAt: loadedAt.UTC(), Auth: cfg.Auth.Enabled(),
			Reloads: reloads},
		Rules:         make([]Rule, len(cfg.Strategy.Conditions)),
		Fallback:      cfg.Targets[0].VirtualKey,
		Targets:       make([]Target, len(st.Targets)),
		DecisionsHead: s.opts.Recorder.Ring().Head(),
	}
	for i := range cfg.Strategy.Conditions {
		c := &cfg.Strategy.Conditions[i]
		out.Rules[i] = Rule{Index: i, Line: c.Line, Key: c.Key, Field: c.Field, Value: c.Value, Chain: c.Chain()}
	}
	q := s.opts.Quotas
	if q == nil && st.Quota != nil {
		q = planQuotas{st.Quota}
	}
	for i, t := range st.Targets {
		out.Targets[i] = target(&cfg.Targets[i], t, q, now)
	}
	out.Keys = s.keys(cfg, q)
	if st.Quota != nil {
		for i := range out.Keys {
			if r, ok := st.Quota.EstimateRatio(out.Keys[i].Name); ok {
				out.Keys[i].EstimateRatio = &r
			}
		}
	}
	return out
}

func target(ct *config.Target, t *upstream.Target, q Quotas, now time.Time) Target {
	out := Target{
		Name:       t.Name,
		Provider:   t.Provider,
		Residency:  residencyOf(ct),
		Models:     ct.Models,
		Circuit:    t.Breaker().State(now).String(),
		InFlight:   t.Limiter().InFlight(),
		QueueDepth: t.Limiter().QueueDepth(),
	}
	if out.Models == nil {
		out.Models = []string{}
	}
	if d := t.Park().Remaining(now); d > 0 {
		until := now.Add(d).UTC()
		out.ParkedUntil = &until
	}
	if q != nil {
		out.Quota = q.TargetQuota(t.Name)
	}
	return out
}

// keys lists the configured keys in file order, then requests without a
// key when there were any (or when the config has no auth block).
func (s *Server) keys(cfg *config.Config, q Quotas) []Key {
	m := *s.opts.Recorder.keys.Load()
	names := s.keyNames(cfg)
	out := make([]Key, 0, len(names))
	for _, n := range names {
		k := Key{Name: n}
		if c := m[n]; c != nil {
			k.Requests, k.Errors = c.requests.Load(), c.errors.Load()
			k.PromptTokens, k.CompletionTokens = c.prompt.Load(), c.completion.Load()
			k.CacheReadTokens, k.CacheWriteTokens = c.cacheRead.Load(), c.cacheWrite.Load()
			if c.priced.Load() {
				usd := float64(c.spend.Load()) / 1e6
				k.SpendUSD = &usd
			}
			if ns := c.lastSeen.Load(); ns > 0 {
				t := time.Unix(0, ns).UTC()
				k.LastSeen = &t
			}
		}
		if q != nil && n != "" {
			k.Quota = q.KeyQuota(n)
			if day, month, ok := q.Spend(n); ok {
				k.SpendDayUSD, k.SpendMonthUSD = &day, &month
			}
		}
		out = append(out, k)
	}
	return out
}

// keyNames lists the configured keys in file order, then "" (requests
// without a key) when there were any or the config has no auth block.
func (s *Server) keyNames(cfg *config.Config) []string {
	names := make([]string, 0, len(cfg.Auth.Keys)+1)
	for _, k := range cfg.Auth.Keys {
		names = append(names, k.Name)
	}
	if c := (*s.opts.Recorder.keys.Load())[""]; !cfg.Auth.Enabled() || (c != nil && c.requests.Load() > 0) {
		names = append(names, "")
	}
	return names
}
