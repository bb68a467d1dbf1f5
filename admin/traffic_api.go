package admin

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/traffic"
)

// TrafficHistory is the answer of GET /api/history (docs/console.md,
// History): the last minutes of each target and key in points of Step
// seconds, oldest first. Point i covers [Start+i·Step, Start+(i+1)·Step),
// the last one ending at End, the start of the second in progress.
type TrafficHistory struct {
	Now    time.Time `json:"now"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Step   int       `json:"step"`
	Window int       `json:"window"`
	// Targets are in the configuration's order; Keys too, then requests
	// without a key (name "") when there were any or auth is off.
	Targets []SeriesHistory `json:"targets"`
	Keys    []SeriesHistory `json:"keys"`
}

// SeriesHistory is one target's or key's history. Each list has one value
// per point; a value is null where it has no meaning (a rate before the
// console was started or the target or key configured, an error rate or
// latency of a point without requests).
type SeriesHistory struct {
	Name string `json:"name"`
	// Total is the whole window's; LastMinute the last 60 seconds'.
	Total      Rates `json:"total"`
	LastMinute Rates `json:"last_minute"`
	// For a target: its calls (attempts); for a key: its requests.
	RequestsPerS []Num `json:"requests_per_s"`
	// ErrorRate is the share of failed calls or requests, 0 to 1.
	ErrorRate []Num `json:"error_rate"`
	// P50Ms and P99Ms are latency percentiles in milliseconds.
	P50Ms []Num `json:"p50_ms"`
	P99Ms []Num `json:"p99_ms"`
	// TokensPerS counts input and output tokens of the answers.
	TokensPerS []Num `json:"tokens_per_s"`
}

// Rates sums a run of seconds.
type Rates struct {
	// Seconds is how many seconds of data the run holds.
	Seconds      int    `json:"seconds"`
	Requests     uint64 `json:"requests"`
	Errors       uint64 `json:"errors"`
	Tokens       uint64 `json:"tokens"`
	RequestsPerS Num    `json:"requests_per_s"`
	ErrorRate    Num    `json:"error_rate"`
	P50Ms        Num    `json:"p50_ms"`
	P99Ms        Num    `json:"p99_ms"`
	TokensPerS   Num    `json:"tokens_per_s"`
}

// Num is a number that is null in JSON when NaN, written with 4
// significant digits.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(n), 'g', 4, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler: null is NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	*n = Num(f)
	return err
}

var nan = Num(math.NaN())

// Defaults and bounds of /api/history's parameters, in seconds.
const (
	defaultHistoryStep = 10
)

// history answers GET /api/history[?window=SECONDS][&step=SECONDS]
// [&target=NAME]…[&key=NAME]…: every target's and key's history, or, when
// some target or key is named, only those named.
func (s *Server) history(rc *fasthttp.RequestCtx, cfg *config.Config, now time.Time) {
	args := rc.QueryArgs()
	window, step := traffic.MaxWindow, defaultHistoryStep
	for _, p := range []struct {
		name string
		v    *int
	}{{"window", &window}, {"step", &step}} {
		if !args.Has(p.name) {
			continue
		}
		n, err := strconv.Atoi(string(args.Peek(p.name)))
		if err != nil || n < 1 || n > traffic.MaxWindow {
			s.jsonError(rc, fasthttp.StatusBadRequest, p.name+": want seconds, 1 to 900")
			return
		}
		*p.v = n
	}
	if step > window {
		s.jsonError(rc, fasthttp.StatusBadRequest, "step: want at most window")
		return
	}
	var wantTargets, wantKeys []string
	for k, v := range args.All() {
		switch string(k) {
		case "target":
			wantTargets = append(wantTargets, string(v))
		case "key":
			wantKeys = append(wantKeys, string(v))
		}
	}
	named := len(wantTargets) > 0 || len(wantKeys) > 0
	f := traffic.NewFrame(now.Unix(), window, step)
	out := &TrafficHistory{Now: now.UTC(), Start: time.Unix(f.Start, 0).UTC(), End: time.Unix(f.End, 0).UTC(),
		Step: int(f.Step), Window: f.N * int(f.Step), Targets: []SeriesHistory{}, Keys: []SeriesHistory{}}
	spans := make([]traffic.Span, f.N)
	minute := traffic.Frame{Start: f.End - 60, End: f.End, Step: 60, N: 1}
	targets := *s.opts.Recorder.targets.Load()
	for i := range cfg.Targets {
		name := cfg.Targets[i].VirtualKey
		if h := targets[name]; h != nil && (!named || slices.Contains(wantTargets, name)) {
			out.Targets = append(out.Targets, seriesHistory(name, h, f, minute, spans))
		}
	}
	keys := *s.opts.Recorder.keys.Load()
	for _, name := range s.keyNames(cfg) {
		if c := keys[name]; c != nil && c.history != nil && (!named || slices.Contains(wantKeys, name)) {
			out.Keys = append(out.Keys, seriesHistory(name, c.history, f, minute, spans))
		}
	}
	s.writeJSON(rc, out)
}

// seriesHistory reads h over f and over the frame of its last minute
// (spans is scratch of f.N spans). Each second is read once for the points;
// the window's percentiles come from the points' summed histograms, so a
// 15-minute p99 costs one pass over the seconds and one over the points.
func seriesHistory(name string, h *traffic.Series, f, minute traffic.Frame, spans []traffic.Span) SeriesHistory {
	var last [1]traffic.Span
	spans = h.Read(f, spans)
	out := SeriesHistory{Name: name, RequestsPerS: make([]Num, f.N), ErrorRate: make([]Num, f.N),
		P50Ms: make([]Num, f.N), P99Ms: make([]Num, f.N), TokensPerS: make([]Num, f.N)}
	var all traffic.Span
	for i := range spans {
		r := rates(&spans[i])
		out.RequestsPerS[i], out.ErrorRate[i], out.P50Ms[i], out.P99Ms[i], out.TokensPerS[i] =
			r.RequestsPerS, r.ErrorRate, r.P50Ms, r.P99Ms, r.TokensPerS
		all.Add(&spans[i])
	}
	out.Total = rates(&all)
	out.LastMinute = rates(&h.Read(minute, last[:])[0])
	return out
}

// rates turns a span's sums into rates, shares and percentiles.
func rates(sp *traffic.Span) Rates {
	r := Rates{Seconds: sp.Seconds, Requests: sp.Requests, Errors: sp.Errors, Tokens: sp.Tokens,
		RequestsPerS: nan, ErrorRate: nan, P50Ms: nan, P99Ms: nan, TokensPerS: nan}
	if sp.Seconds > 0 {
		r.RequestsPerS = Num(float64(sp.Requests) / float64(sp.Seconds))
		r.TokensPerS = Num(float64(sp.Tokens) / float64(sp.Seconds))
	}
	if sp.Requests > 0 {
		r.ErrorRate = Num(float64(sp.Errors) / float64(sp.Requests))
	}
	if d, ok := sp.Latency.Quantile(0.5); ok {
		r.P50Ms = Num(float64(d) / 1e6)
	}
	if d, ok := sp.Latency.Quantile(0.99); ok {
		r.P99Ms = Num(float64(d) / 1e6)
	}
	return r
}
