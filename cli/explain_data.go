package cli

import (
	"fmt"
	"strings"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/router"
)

// report builds an Explanation and its text together: each fact is set in
// the data and printed as its line in the same place, so the two cannot
// disagree.
type report struct {
	e     *Explanation
	lines []string
}

// printf adds one line of text.
func (x *report) printf(format string, args ...any) {
	x.lines = append(x.lines, fmt.Sprintf(format, args...))
}

// note adds a "note:" line and its note.
func (x *report) note(s string) {
	x.e.Notes = append(x.e.Notes, s)
	x.printf("note: %s", s)
}

// outcome sets the outcome and prints its line.
func (x *report) outcome(routesTo []string, refused *OutcomeError, text string) {
	if routesTo == nil {
		routesTo = []string{}
	}
	x.e.Outcome = Outcome{RoutesTo: routesTo, Error: refused, Text: text}
	x.printf("outcome: %s", text)
}

// done completes the text and returns the Explanation.
func (x *report) done() *Explanation {
	x.e.Lines = x.lines
	x.e.Text = strings.Join(x.lines, "\n") + "\n"
	return x.e
}

// requestRead is r as data; set and rawMetadata say which fields were
// given (see describeRequest).
func requestRead(r *router.Request, set map[string]bool, rawMetadata string) RequestRead {
	out := RequestRead{Surface: r.Surface.String(), Model: string(r.Model), Stream: r.Stream, Tools: r.HasTools,
		Metadata: pairsMap(r.Metadata), Ignored: []string{}}
	if r.HasUser {
		u := string(r.User)
		out.User = &u
	}
	if !r.Surface.ChatLike() {
		for _, f := range []string{"stream", "tools"} {
			if set[f] {
				out.Ignored = append(out.Ignored, f)
			}
		}
		if rawMetadata != "" {
			out.Ignored = append(out.Ignored, "metadata")
		}
	}
	return out
}

// keyUsed is key k as data; allowed says whether its allow-list admits the
// request's model.
func keyUsed(cfg *config.Config, k *router.KeySpec, allowed bool) *KeyUsed {
	out := &KeyUsed{Name: k.Name, Metadata: pairsMap(k.Metadata), Models: k.Models, ModelAllowed: allowed,
		Residency: k.Residency}
	if k.HasUser {
		u := string(k.User)
		out.User = &u
	}
	for i := range cfg.Auth.Keys {
		if cfg.Auth.Keys[i].Name == k.Name {
			out.Limits = limitsOf(&cfg.Auth.Keys[i].Limits)
		}
	}
	return out
}

func pairsMap(ps []router.Pair) map[string]string {
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		m[string(p.Key)] = string(p.Value)
	}
	return m
}

// limitsOf returns the limits set in l by their config names; nil when
// none is.
func limitsOf(l *config.Limits) map[string]float64 {
	m := map[string]float64{}
	add := func(name string, v float64) {
		if v > 0 {
			m[name] = v
		}
	}
	add("requests_per_minute", float64(l.RequestsPerMinute))
	add("tokens_per_minute", float64(l.TokensPerMinute))
	add("tokens_per_day", float64(l.TokensPerDay))
	add("spend_per_day_usd", l.SpendPerDayUSD)
	add("spend_per_month_usd", l.SpendPerMonthUSD)
	if len(m) == 0 {
		return nil
	}
	return m
}

// memberPrice is t's price for model (the id the client asked for), or nil.
func memberPrice(t *config.Target, model string) *Price {
	p, ok := priceFor(t.Prices, model)
	if !ok {
		return nil
	}
	return &Price{Input: p.Input, Output: p.Output, CacheRead: p.CacheReadUSD(), CacheWrite: p.CacheWriteUSD()}
}

// formOf is how target t serves surface s for the model id sent upstream,
// as the walk's adapter decides it. It reads no credential.
func formOf(t *config.Target, s router.Surface, upstreamModel string) provider.Form {
	info := provider.Lookup(t.Provider)
	if info == nil {
		return provider.FormNone
	}
	ep := provider.Endpoint{BaseURL: strings.TrimRight(t.BaseURL, "/"), Region: t.Region,
		APIVersion: t.AzureAPIVersion, Project: t.Project}
	return provider.FormOf(info.Adapter, &ep, s, []byte(upstreamModel))
}

// countTokensForm is how target t answers POST /v1/messages/count_tokens
// for upstreamModel on the messages surface: "native" (the provider
// counts) or "estimate" (the gateway does); "" on other surfaces.
func countTokensForm(t *config.Target, s router.Surface, upstreamModel string) string {
	info := provider.Lookup(t.Provider)
	if info == nil || s != router.SurfaceMessages {
		return ""
	}
	ep := provider.Endpoint{APIVersion: t.AzureAPIVersion}
	return provider.CountTokensForm(info.Adapter, &ep, []byte(upstreamModel)).String()
}
