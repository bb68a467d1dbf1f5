package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/router"
)

// explain implements `switchyard explain`: it routes a described request
// through the config's compiled snapshot, as the gateway would, and prints
// why it goes where it goes. No upstream is called and circuit, park and
// queue state are not considered: the outcome is what a walk over healthy
// members would do.
//
// Output on stdout, one fact a line:
//
//	key: acme, binds user "acme", binds metadata tier="gold", any model   (with -key)
//	request: chat model "gpt-4o", user "alice", stream false, tools false, metadata tier="gold"
//	rule: strategy.conditions[2] line 14: metadata tier=gold
//	chain: openai, bedrock
//	member openai: provider openai, serves model yes, serves surface native: candidate
//	member bedrock: provider bedrock, serves model no, serves surface translated: not a candidate
//	outcome: routes to openai
//
// With -json it prints an Explanation instead: the same facts as data,
// the text included (docs/routing.md, Explain as data).
//
// An invalid config is printed as by validate, on stderr, with exit 1; a
// malformed -metadata value is exit 2.
func explain(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("explain", stderr)
	cfgPath := configFlag(fs)
	model := fs.String("model", "", "the request's `model` (required)")
	user := fs.String("user", "", "the request's `user`; left out, the request has none")
	stream := fs.Bool("stream", false, "the request streams")
	tools := fs.Bool("tools", false, "the request carries a non-empty tools array")
	metadata := fs.String("metadata", "", "the X-Gateway-Metadata header, a JSON object")
	surfaceName := fs.String("surface", "chat", "the API `surface`: chat, completions, embeddings, images, responses or messages")
	keyName := fs.String("key", "", "explain the request as client key `NAME` sends it (its bindings and allow-list)")
	asJSON := fs.Bool("json", false, "print the report as JSON: the text and the same facts as data")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *model == "" {
		fmt.Fprintln(stderr, "explain: -model is required")
		fs.Usage()
		return ExitUsage
	}
	q := ExplainRequest{Model: *model, User: *user, HasUser: set["user"], Stream: *stream, StreamSet: set["stream"],
		Tools: *tools, ToolsSet: set["tools"], Metadata: *metadata, Surface: *surfaceName, Key: *keyName}
	// The request is checked before the config is read: a malformed
	// request is a usage error whatever the file holds.
	if _, _, err := q.parse(); err != nil {
		fmt.Fprintf(stderr, "explain: %v\n", err)
		return ExitUsage
	}
	// Without the residency proof: explain shows where a refused
	// config's witness request goes (and says the proof fails).
	cfg, ok := loadWith(config.LoadUnproven, *cfgPath, stderr)
	if !ok {
		return ExitFail
	}
	var uerr *ExplainUsageError
	e, err := ExplainData(cfg, q)
	switch {
	case errors.As(err, &uerr):
		fmt.Fprintf(stderr, "explain: %v\n", err)
		return ExitUsage
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", *cfgPath, err)
		return ExitFail
	}
	if !*asJSON {
		_, _ = io.WriteString(stdout, e.Text)
		return ExitOK
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "explain: %v\n", err)
		return ExitFail
	}
	_, _ = stdout.Write(append(b, '\n'))
	return ExitOK
}

// ExplainRequest describes the request that Explain routes: explain's
// flags, and the console's /api/explain parameters.
type ExplainRequest struct {
	Model string
	// User is the request's user when HasUser.
	User    string
	HasUser bool
	// Stream and Tools, and whether they were given (a field given on a
	// surface that ignores it is named as ignored).
	Stream, StreamSet bool
	Tools, ToolsSet   bool
	// Metadata is the X-Gateway-Metadata header, a JSON object; "" = none.
	Metadata string
	// Surface is the surface's name; "" = chat.
	Surface string
	// Key names the client key that sends the request; "" = none.
	Key string
}

// ExplainUsageError is a described request Explain cannot route: an
// unknown surface or key, or malformed metadata. Its text names the flag.
type ExplainUsageError struct{ msg string }

func (e *ExplainUsageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &ExplainUsageError{msg: fmt.Sprintf(format, args...)}
}

// parse returns the request's surface and router.Request, without the
// key's bindings.
func (q *ExplainRequest) parse() (router.Surface, router.Request, error) {
	name := q.Surface
	if name == "" {
		name = "chat"
	}
	surface, ok := router.ParseSurface(name)
	if !ok {
		return 0, router.Request{}, usageErrorf("-surface %q is not a surface; want chat, completions, embeddings, images, responses or messages", name)
	}
	req := router.Request{
		Surface:  surface,
		Model:    []byte(q.Model),
		User:     []byte(q.User),
		HasUser:  q.HasUser,
		Stream:   q.Stream,
		HasTools: q.Tools,
	}
	// The gateway reads X-Gateway-Metadata on chat-like surfaces only and
	// neither parses nor validates it elsewhere (docs/routing.md, 2); so does explain.
	if surface.ChatLike() && q.Metadata != "" {
		var p router.MetadataParser
		pairs, err := p.Parse([]byte(q.Metadata))
		if err != nil {
			return 0, router.Request{}, usageErrorf("-metadata: %v", err)
		}
		req.Metadata = pairs
	}
	return surface, req, nil
}

// Explain writes explain's report (see explain) of request q under cfg to
// stdout. It returns an *ExplainUsageError for a request it cannot
// describe, and another error when the config cannot be compiled; nothing
// is written then. The console's explain form shows the same report.
func Explain(cfg *config.Config, q ExplainRequest, stdout io.Writer) error {
	e, err := ExplainData(cfg, q)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, e.Text)
	return err
}

// ExplainData returns explain's report of request q under cfg as data, its
// text included (Explanation.Text is what Explain writes). Errors as
// Explain's.
func ExplainData(cfg *config.Config, q ExplainRequest) (*Explanation, error) {
	surface, req, err := q.parse()
	if err != nil {
		return nil, err
	}
	set := map[string]bool{"user": q.HasUser, "stream": q.StreamSet, "tools": q.ToolsSet}
	model, user, metadata := &q.Model, &q.User, &q.Metadata
	rules, targets := cfg.RouterSpecs()
	snap, err := router.Compile(rules, targets, 0)
	if err != nil {
		// Load validated the config, so this is a disagreement between
		// config and router; report it rather than guess.
		return nil, fmt.Errorf("cannot compile routing table: %v", err)
	}
	key, err := explainKey(cfg, q.Key)
	if err != nil {
		return nil, err
	}
	x := &report{e: &Explanation{Chain: []string{}, Members: []ChainMember{}, Notes: []string{}}}
	e := x.e
	if key != nil {
		allowed := router.NewModelSet(key.Models)
		e.Key = keyUsed(cfg, key, allowed.Has(req.Model))
		x.printf("key: %s", describeKey(key))
		if l := keyLimitsLine(cfg, key.Name); l != "" {
			x.printf("%s", l)
		}
		if l := estimateLine(cfg, key.Name); l != "" {
			x.printf("%s", l)
		}
		if !e.Key.ModelAllowed {
			e.Request = requestRead(&req, set, *metadata)
			x.printf("request: %s", describeRequest(&req, set, *metadata))
			x.outcome(nil, &OutcomeError{Status: 403, Code: "model_not_allowed"},
				fmt.Sprintf("403 model_not_allowed: key %q may not use model %q (checked before routing)", key.Name, *model))
			return x.done(), nil
		}
		if key.HasUser && set["user"] && string(key.User) != *user {
			x.note(fmt.Sprintf("the key binds user %q; the request's user %q does not route", key.User, *user))
		}
		router.Bind(&req, key, nil)
	}

	e.Request = requestRead(&req, set, *metadata)
	x.printf("request: %s", describeRequest(&req, set, *metadata))
	rule, chain := snap.Match(&req)
	if rule < 0 {
		e.Rule = &MatchedRule{Fallback: true, Index: -1}
		x.printf("rule: no match → targets[0] (%s)", snap.Target(0).Name)
	} else {
		r := snap.Rule(rule)
		c := &cfg.Strategy.Conditions[rule]
		e.Rule = &MatchedRule{Index: rule, Line: c.Line, Key: c.Key, Field: r.Field, Value: r.Value}
		x.printf("rule: %s", describeMatch(r, rule, c.Line))
	}
	for _, t := range chain {
		e.Chain = append(e.Chain, snap.Target(t).Name)
	}
	x.printf("chain: %s", strings.Join(e.Chain, ", "))

	var candidates []string
	servesModel := false
	for _, t := range chain {
		ts := snap.Target(t)
		ct := &cfg.Targets[t]
		up := *model
		if v, ok := ct.ModelMap[*model]; ok {
			up = v
		}
		form := formOf(ct, surface, up)
		m := snap.ServesModel(t, req.Model)
		s := snap.ServesSurface(t, surface) && form != provider.FormNone
		mem := ChainMember{Target: ts.Name, Provider: ts.Provider, ServesModel: m, ServesSurface: s,
			Form: form.String(), CountTokensForm: countTokensForm(ct, surface, up), ModelSent: up, Residency: ts.Residency, Candidate: m && s,
			Limits: limitsOf(&ct.Limits), Price: memberPrice(ct, *model)}
		if d := providerDetail(ct, up); d != "" {
			mem.Detail = d[2 : len(d)-1] // providerDetail's " (…)"
		}
		if key != nil && key.Residency != nil {
			ok := slices.Contains(key.Residency, ts.Residency)
			mem.ResidencyAllowed = &ok
		}
		e.Members = append(e.Members, mem)
		verdict := "not a candidate"
		if mem.Candidate {
			verdict = "candidate"
			// The id the member would receive, when model_map renames it.
			if up != *model {
				verdict += fmt.Sprintf(", sends model %q", up)
			}
			candidates = append(candidates, ts.Name)
		}
		servesModel = servesModel || m
		x.printf("member %s: provider %s%s, serves model %s, serves surface %s: %s%s",
			ts.Name, ts.Provider, providerDetail(ct, up), yesNo(m), describeForm(form, mem.CountTokensForm, s), verdict, memberQuota(ct, *model))
	}
	switch {
	case len(candidates) > 0:
		out := "routes to " + candidates[0]
		if len(candidates) > 1 {
			out += ", then " + strings.Join(candidates[1:], ", then ") + " on provider failure"
		}
		x.outcome(candidates, nil, out)
	case servesModel:
		x.outcome(nil, &OutcomeError{Status: 404, Code: "unsupported_endpoint"},
			fmt.Sprintf("404 unsupported_endpoint: chain members serve model %q but not the %s surface", *model, surface))
	default:
		x.outcome(nil, &OutcomeError{Status: 404, Code: "model_not_found"},
			fmt.Sprintf("404 model_not_found: no chain member serves model %q", *model))
	}
	explainResidency(x, snap, key, chain, e.Members)
	if key == nil && cfg.Auth.Enabled() {
		x.note("the config has client keys: a request without one gets 401 invalid_api_key; -key NAME explains one key's requests")
	}
	if len(candidates) == 0 {
		// The rule decides where a request may go; a target outside the
		// chain is never called, even one that would serve it. Say so, as
		// this is the usual surprise behind a 404.
		inChain := make(map[int]bool, len(chain))
		for _, t := range chain {
			inChain[t] = true
		}
		for t := range snap.NumTargets() {
			if !inChain[t] && snap.ServesModel(t, req.Model) && snap.ServesSurface(t, surface) {
				x.note(fmt.Sprintf("targets[%d] (%s) serves this request but is not in the chain, so it is never called",
					t, snap.Target(t).Name))
			}
		}
	}
	return x.done(), nil
}

// describeRequest renders the request's routing fields. Fields the gateway
// ignores on this surface are named as ignored, when they were given.
func describeRequest(r *router.Request, set map[string]bool, rawMetadata string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s model %q", r.Surface, r.Model)
	if r.HasUser {
		fmt.Fprintf(&b, ", user %q", r.User)
	} else {
		b.WriteString(", no user")
	}
	rich := r.Surface.ChatLike()
	if rich {
		fmt.Fprintf(&b, ", stream %t, tools %t", r.Stream, r.HasTools)
		if len(r.Metadata) == 0 {
			b.WriteString(", no metadata")
		} else {
			b.WriteString(", metadata")
			for _, p := range r.Metadata {
				fmt.Fprintf(&b, " %s=%q", p.Key, p.Value)
			}
		}
		return b.String()
	}
	var ignored []string
	if set["stream"] {
		ignored = append(ignored, "stream")
	}
	if set["tools"] {
		ignored = append(ignored, "tools")
	}
	if rawMetadata != "" {
		ignored = append(ignored, "metadata")
	}
	if len(ignored) > 0 {
		fmt.Fprintf(&b, " (ignored on %s: %s)", r.Surface, strings.Join(ignored, ", "))
	}
	return b.String()
}

// describeMatch renders a matched rule as
// "strategy.conditions[i] line N: key=value" or, for metadata,
// "strategy.conditions[i] line N: metadata field=value".
func describeMatch(r router.RuleSpec, i, line int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "strategy.conditions[%d]", i)
	if line > 0 {
		fmt.Fprintf(&b, " line %d", line)
	}
	if r.Key == router.KeyMetadata {
		fmt.Fprintf(&b, ": metadata %s=%s", r.Field, r.Value)
	} else {
		fmt.Fprintf(&b, ": %s=%s", r.Key, r.Value)
	}
	return b.String()
}

// describeForm renders whether a member serves the surface: "no",
// "native" or "translated", and "(count_tokens estimated)" on messages
// where the gateway estimates count_tokens.
func describeForm(f provider.Form, countTokens string, serves bool) string {
	if !serves {
		return "no"
	}
	if countTokens == provider.FormEstimate.String() {
		return f.String() + " (count_tokens estimated)"
	}
	return f.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// explainKey returns the client key named name (nil when name is ""), or
// an *ExplainUsageError saying why there is none.
func explainKey(cfg *config.Config, name string) (*router.KeySpec, error) {
	if name == "" {
		return nil, nil
	}
	specs := cfg.KeySpecs()
	names := make([]string, len(specs))
	for i := range specs {
		if specs[i].Name == name {
			return &specs[i], nil
		}
		names[i] = specs[i].Name
	}
	if len(specs) == 0 {
		return nil, usageErrorf("-key %q: the config has no auth block, so requests need no key", name)
	}
	return nil, usageErrorf("-key %q names no client key; configured: %s", name, strings.Join(names, ", "))
}

// describeKey renders a key's bindings and allow-list.
func describeKey(k *router.KeySpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", k.Name)
	if k.HasUser {
		fmt.Fprintf(&b, ", binds user %q", k.User)
	} else {
		b.WriteString(", user unbound")
	}
	if len(k.Metadata) == 0 {
		b.WriteString(", no metadata bound")
	} else {
		b.WriteString(", binds metadata")
		for _, p := range k.Metadata {
			fmt.Fprintf(&b, " %s=%q", p.Key, p.Value)
		}
	}
	if k.Models == nil {
		b.WriteString(", any model")
	} else {
		fmt.Fprintf(&b, ", models %s", strings.Join(k.Models, ", "))
	}
	return b.String()
}
