package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/provider"
)

// Provider defaults (docs/providers.md). The bedrock URL takes the
// target's region.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultBedrockBaseURL   = "https://bedrock-runtime.%s.amazonaws.com"
)

const wantKey = "model, model_prefix, user, stream, has_tools or metadata"

var wantProvider = provider.Names()

func knownProvider(p string) bool { return provider.Lookup(p) != nil }

// applyTargetDefaults is phase 3 for the defaults that depend on other keys
// or on the environment (the static ones were preset before decoding).
//
// Empty means absent: `base_url: ""` or `api_key: ${KEY:-}` that expands to
// "" take the default like a missing key.
//
// Credentials follow the URL they were issued for. <PROVIDER>_API_KEY is
// filled in only when the base URL was defaulted too (from
// <PROVIDER>_BASE_URL or the provider's public endpoint). A target with an
// explicit base_url (a vLLM pool or an EU deployment with provider openai)
// never silently receives OPENAI_API_KEY: the operator's OpenAI key must not
// reach a server it does not belong to. Such a target gets a key only from
// its own api_key. Likewise a bedrock target with explicit AWS keys does not
// take BEDROCK_API_KEY.
func (d *decoder) applyTargetDefaults(cfg *Config) {
	d.baseFromEnv = map[int]string{}
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		path := index("targets", i)
		if t.Provider == "" && !d.decodeBad[join(path, "provider")] && knownProvider(t.VirtualKey) {
			t.Provider = t.VirtualKey
		}
		if !knownProvider(t.Provider) {
			continue // reported by validate
		}
		info := provider.Lookup(t.Provider)
		defaulted := false
		if t.BaseURL == "" && !d.decodeBad[join(path, "base_url")] {
			defaulted = true
			if v, ok := d.lookup(info.EnvBaseURL); ok && v != "" {
				t.BaseURL = v
				d.baseFromEnv[i] = info.EnvBaseURL
			} else {
				t.BaseURL = info.DefaultBaseURL
				switch t.Provider {
				case ProviderVertex:
					t.BaseURL = cloudBaseURL(t)
				case ProviderBedrock:
					// An invalid region is reported at region; it must not
					// become a host name (region "evil.example/" would).
					if t.Region != "" && validRegion(t.Region) {
						t.BaseURL = fmt.Sprintf(DefaultBedrockBaseURL, t.Region)
					}
				}
			}
		}
		t.BaseURL = strings.TrimRight(t.BaseURL, "/")
		sigv4 := t.AWSAccessKeyID != "" || t.AWSSecretAccessKey != ""
		entra := t.AzureTenantID != "" || t.AzureClientID != "" || t.AzureClientSecret != ""
		// An azure base_url is always the operator's own resource (there is
		// no public default), so AZURE_OPENAI_API_KEY applies to it.
		envKeyApplies := defaulted || t.Provider == ProviderAzure
		if envKeyApplies && info.EnvAPIKey != "" && t.APIKey == "" && !sigv4 && !entra && !d.decodeBad[join(path, "api_key")] {
			if v, ok := d.lookup(info.EnvAPIKey); ok {
				t.APIKey = v
			}
		}
		if entra && t.AzureAuthority == "" && t.Provider == ProviderAzure {
			t.AzureAuthority = DefaultAzureAuthority
		}
		t.AzureAuthority = strings.TrimRight(t.AzureAuthority, "/")
	}
}

// validate is phase 4: the semantic checks of docs/configuration.md, Configuration reference "Load-time
// validation". It reports every problem; none stops the others.
func (d *decoder) validate(cfg *Config) {
	d.validateServer(cfg)
	declared := d.validateTargets(cfg)
	d.validateStrategy(cfg, declared)
	d.validateAuth(cfg)
	d.validateObservability(cfg)
	d.validateQuotas(cfg)
	d.validateAudit(cfg)
	d.validateResidency(cfg) // last: the proof needs an otherwise valid config
}

func (d *decoder) positiveDuration(path string, v time.Duration, example string) {
	if v <= 0 {
		d.problemf(path, "%s is out of range; want a duration above 0, such as %q", v, example)
	}
}

func (d *decoder) intRange(path string, v, lo, hi int) {
	switch {
	case hi < 0 && v < lo:
		d.problemf(path, "%d is out of range; want %d or more", v, lo)
	case hi >= 0 && (v < lo || v > hi):
		d.problemf(path, "%d is out of range; want %d to %d", v, lo, hi)
	}
}

func (d *decoder) validateServer(cfg *Config) {
	s := &cfg.Server
	if _, port, err := net.SplitHostPort(s.Listen); err != nil || port == "" {
		d.problemf("server.listen", "%s is not a host:port address; want e.g. \"127.0.0.1:8080\" or \":8080\"", quoteShort(s.Listen))
	}
	d.intRange("server.max_request_bytes", s.MaxRequestBytes, 1, -1)
	d.positiveDuration("server.request_timeout", s.RequestTimeout, "300s")
	d.positiveDuration("server.shutdown_timeout", s.ShutdownTimeout, "30s")
	if s.DrainDelay < 0 || s.DrainDelay > MaxDrainDelay {
		d.problemf("server.drain_delay", "%s is out of range; want 0s (no delay) to %s, such as \"5s\"", s.DrainDelay, MaxDrainDelay)
	}
	if w := s.ConfigWatch; w != 0 && (w < MinConfigWatch || w > MaxConfigWatch) {
		d.problemf("server.config_watch", "%s is out of range; want 0s (off) or %s to %s, such as \"5s\"", w, MinConfigWatch, MaxConfigWatch)
	}
	d.validateBrowserLists(s)
	d.validateBatchServer(cfg)
	d.intRange("server.websocket.max_message_bytes", s.WebSocket.MaxMessageBytes, MinWebSocketMessageBytes, MaxWebSocketMessageBytes)
	if t := s.WebSocket.IdleTimeout; t < MinWebSocketIdle || t > MaxWebSocketIdle {
		d.problemf("server.websocket.idle_timeout", "%s is out of range; want %s to %s, such as \"5m\"", t, MinWebSocketIdle, MaxWebSocketIdle)
	}
	switch cfg.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		d.problemf("log.level", "%s is not a log level; want debug, info, warn or error", quoteShort(cfg.Log.Level))
	}
	switch cfg.Log.Format {
	case "json", "console":
	default:
		d.problemf("log.format", "%s is not a log format; want json or console", quoteShort(cfg.Log.Format))
	}
}

// validateTargets checks every target and returns virtual_key -> index for
// the targets with a usable name.
func (d *decoder) validateTargets(cfg *Config) map[string]int {
	declared := map[string]int{}
	if len(cfg.Targets) == 0 {
		d.problemf("targets", "no targets; want at least one (targets[0] is the no-match fallback)")
		return declared
	}
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		path := index("targets", i)
		p := func(key string) string { return join(path, key) }

		switch first, dup := declared[t.VirtualKey]; {
		case t.VirtualKey == "":
			d.problemf(p("virtual_key"), "virtual_key is required; want a unique name for rules to use")
		case dup:
			d.problemf(p("virtual_key"), "duplicate virtual_key %q (first at targets[%d], line %d); want unique names",
				t.VirtualKey, first, cfg.Targets[first].Line)
		default:
			declared[t.VirtualKey] = i
		}

		switch {
		case t.Provider == "":
			d.problemf(p("provider"), "provider is required; want %s", wantProvider)
		case !knownProvider(t.Provider):
			d.problemf(p("provider"), "%s is not a provider; want %s", quoteShort(t.Provider), wantProvider)
		}

		if t.BaseURL != "" {
			if msg := checkBaseURL(t.BaseURL); msg != "" {
				if env := d.baseFromEnv[i]; env != "" {
					msg += " (the URL came from " + env + ")"
				}
				d.problemf(p("base_url"), "%s", msg)
			}
		}

		d.validateCredentials(t, path)
		d.validateModels(t, path)

		d.positiveDuration(p("timeout"), t.Timeout, "60s")
		d.intRange(p("retry.attempts"), t.Retry.Attempts, 1, 10)
		d.intRange(p("retry.initial_backoff_ms"), t.Retry.InitialBackoffMs, 0, 60000)
		for j, code := range t.Retry.OnStatusCodes {
			d.intRange(index(p("retry.on_status_codes"), j), code, 400, 599)
		}
		d.intRange(p("circuit_breaker.failure_threshold"), t.CircuitBreaker.FailureThreshold, 1, -1)
		d.intRange(p("circuit_breaker.success_threshold"), t.CircuitBreaker.SuccessThreshold, 1, -1)
		d.intRange(p("circuit_breaker.max_half_threshold"), t.CircuitBreaker.MaxHalfThreshold, 1, -1)
		d.positiveDuration(p("circuit_breaker.timeout"), t.CircuitBreaker.Timeout, "30s")
		d.intRange(p("concurrency.max_concurrency"), t.Concurrency.MaxConcurrency, 1, -1)
		d.intRange(p("concurrency.queue_size"), t.Concurrency.QueueSize, 0, -1)
	}
	return declared
}

// checkBaseURL returns "" for an absolute http(s) URL with a host and no
// query, fragment or user info, else what is wrong. It never echoes a URL
// that carries credentials, nor a query (which may hold a key, as in
// "?key=..."): problems are printed and logged.
func checkBaseURL(s string) string {
	shown := quoteShort(withoutQuery(s))
	const want = "want an absolute http(s) URL with a host and no query or fragment, such as https://api.openai.com/v1"
	u, err := url.Parse(s)
	switch {
	case err != nil:
		if strings.Contains(s, "@") {
			return "base_url is not a valid URL; " + want
		}
		return fmt.Sprintf("%s is not a valid URL; %s", shown, want)
	case u.User != nil:
		return "base_url carries credentials (user:password@); put the key in api_key and " + want
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("%s is not an http or https URL; %s", shown, want)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Sprintf("%s has no host; %s", shown, want)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Sprintf("%s has a query; %s", shown, want)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Sprintf("%s has a fragment; %s", shown, want)
	}
	return ""
}

// withoutQuery returns s with everything from its first "?" replaced by
// "?...".
func withoutQuery(s string) string {
	if i := strings.IndexByte(s, '?'); i >= 0 {
		return s[:i] + "?..."
	}
	return s
}

func (d *decoder) validateCredentials(t *Target, path string) {
	p := func(key string) string { return join(path, key) }
	info := provider.Lookup(t.Provider)
	if info == nil {
		return // the provider problem says it all
	}
	for _, key := range provider.SpecificKeys {
		if !info.Accepts(key) && (d.has[p(key)] || key != "api_key" && t.specific(key) != "") {
			d.problemf(p(key), "%s is only for %s; this target's provider is %s", key, provider.Accepting(key), t.Provider)
		}
	}
	if info.Accepts("anthropic_betas") {
		d.validateAnthropicBetas(t.AnthropicBetas, p("anthropic_betas"))
	}
	switch t.Provider {
	case ProviderAzure:
		d.validateAzure(t, path)
		return
	case ProviderVertex:
		d.validateVertex(t, path)
		return
	case ProviderBedrock:
	default:
		return
	}
	id, secret := t.AWSAccessKeyID != "", t.AWSSecretAccessKey != ""
	switch {
	case id && !secret:
		d.problemf(p("aws_access_key_id"), "aws_access_key_id is set without aws_secret_access_key; want both or neither")
	case secret && !id:
		d.problemf(p("aws_secret_access_key"), "aws_secret_access_key is set without aws_access_key_id; want both or neither")
	}
	if t.AWSSessionToken != "" && !id && !secret {
		d.problemf(p("aws_session_token"), "aws_session_token is set without aws_access_key_id and aws_secret_access_key; want it only with them")
	}
	if t.APIKey != "" && (id || secret) {
		d.problemf(p("api_key"), "both api_key and AWS keys are set; want one credential: api_key (a Bedrock API key) or aws_access_key_id/aws_secret_access_key")
	}
	if t.Region != "" && !validRegion(t.Region) {
		d.problemf(p("region"), "%s is not an AWS region; want lowercase letters and digits in hyphen-separated parts, such as us-east-1",
			quoteShort(t.Region))
	} else if t.BaseURL == "" && t.Region == "" && !d.decodeBad[p("base_url")] {
		d.problemf(p("region"), "bedrock needs region or base_url; want an AWS region such as us-east-1")
	} else if t.Region == "" && (id || secret) && regionOfBedrockURL(t.BaseURL) == "" {
		d.problemf(p("region"), "region is required to sign requests with AWS keys (SigV4); want an AWS region such as us-east-1")
	}
}

// validateAnthropicBetas checks a target's anthropic_betas (bedrock,
// vertex): at most provider.MaxAnthropicBetas flags, each once, each one
// flag as clients write them in anthropic-beta (no space or comma, which
// split a header's list, no quote or control character).
func (d *decoder) validateAnthropicBetas(betas []string, path string) {
	if len(betas) > provider.MaxAnthropicBetas {
		d.problemf(path, "%d beta flags; want at most %d", len(betas), provider.MaxAnthropicBetas)
		return
	}
	for i, b := range betas {
		at := index(path, i)
		switch {
		case d.decodeBad[at]:
		case !betaFlag(b):
			d.problemf(at, "%s is not a beta flag; want one flag such as interleaved-thinking-2025-05-14 (letters, digits, '-', '_' or '.')", quoteShort(b))
		case slices.Index(betas, b) < i:
			d.problemf(at, "%s is listed twice; want each flag once", quoteShort(b))
		}
	}
}

// betaFlag reports whether s has the shape of an anthropic-beta flag.
func betaFlag(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// validRegion reports whether r has the shape of an AWS region name
// (us-east-1, us-gov-west-1, cn-north-1): lowercase ASCII letters and digits
// in non-empty parts joined by single hyphens. The region becomes the host
// name of the default bedrock URL and the SigV4 signing scope, so anything
// else (a dot, a slash, an @, a space) is refused rather than sent.
func validRegion(r string) bool {
	if r == "" || r[0] == '-' || r[len(r)-1] == '-' || strings.Contains(r, "--") {
		return false
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// regionOfBedrockURL returns the region named by a
// https://bedrock-runtime[-fips].{region}.amazonaws.com base URL, which the
// bedrock adapter signs with when region is not set; "" for any other URL.
func regionOfBedrockURL(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	rest, ok := strings.CutPrefix(u.Hostname(), "bedrock-runtime.")
	if !ok {
		rest, ok = strings.CutPrefix(u.Hostname(), "bedrock-runtime-fips.")
	}
	region, domain, found := strings.Cut(rest, ".")
	if !ok || !found || !strings.HasPrefix(domain, "amazonaws.") || !validRegion(region) {
		return ""
	}
	return region
}

func (d *decoder) validateModels(t *Target, path string) {
	d.validateModelList(join(path, "models"), t.Models,
		"models is empty, so the target would serve no model; omit models to serve any model, or list model ids")
	keys := make([]string, 0, len(t.ModelMap))
	for k := range t.ModelMap {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ep := join(path, "model_map") + "[" + strconv.Quote(k) + "]"
		if k == "" {
			d.problemf(ep, "model_map key is empty; want the model id clients send")
		}
		if t.ModelMap[k] == "" {
			d.problemf(ep, "model_map value is empty; want the model id sent upstream")
		}
	}
}

func (d *decoder) validateStrategy(cfg *Config, declared map[string]int) {
	s := &cfg.Strategy
	switch s.Mode {
	case "conditional":
		if len(s.Conditions) == 0 && !d.decodeBad["strategy.conditions"] {
			d.problemf("strategy.conditions", "conditional mode needs at least one condition; want a list of {key, value, target_key}")
		}
	case "":
		d.problemf("strategy.mode", "mode is required; want conditional")
	default:
		d.problemf("strategy.mode", "%s is not a strategy mode; want conditional", quoteShort(s.Mode))
	}
	names := make([]string, 0, len(cfg.Targets))
	for _, t := range cfg.Targets {
		if _, ok := declared[t.VirtualKey]; ok && !slices.Contains(names, t.VirtualKey) {
			names = append(names, t.VirtualKey)
		}
	}
	list := strings.Join(names, ", ")
	if list == "" {
		list = "none"
	}
	for i := range s.Conditions {
		d.validateCondition(&s.Conditions[i], index("strategy.conditions", i), declared, list)
	}
}

func (d *decoder) validateCondition(c *Condition, path string, declared map[string]int, names string) {
	p := func(key string) string { return join(path, key) }
	hasValue := d.has[p("value")]
	switch c.Key {
	case KeyModel, KeyModelPrefix, KeyUser:
		switch {
		case c.Value == "":
			d.problemf(p("value"), "value is required with key %s; want a non-empty string", c.Key)
		case strings.TrimSpace(c.Value) != c.Value:
			d.problemf(p("value"), "%s has surrounding spaces; want the value without them", quoteShort(c.Value))
		}
	case KeyStream, KeyHasTools:
		if !hasValue {
			d.problemf(p("value"), "value is required with key %s; want true or false", c.Key)
		} else if c.Value != "true" && c.Value != "false" {
			d.problemf(p("value"), "%s is not a boolean; want true or false", quoteShort(c.Value))
		}
	case KeyMetadata:
		if c.Field == "" {
			d.problemf(p("field"), "field is required with key metadata; want the X-Gateway-Metadata entry name")
		}
		if !hasValue {
			d.problemf(p("value"), "value is required with key metadata; want the entry's value as written")
		}
	case "":
		d.problemf(p("key"), "key is required; want %s", wantKey)
	default:
		d.problemf(p("key"), "%s is not a condition key; want %s", quoteShort(c.Key), wantKey)
	}
	if c.Key != KeyMetadata && (c.Field != "" || d.has[p("field")]) {
		d.problemf(p("field"), "field is only allowed with key metadata; remove it or use key: metadata")
	}

	hasOne, hasMany := d.has[p("target_key")], d.has[p("target_keys")]
	switch {
	case hasOne && hasMany:
		d.problemf(p("target_keys"), "both target_key and target_keys are set; want exactly one")
		return
	case !hasOne && !hasMany:
		d.problemf(p("target_key"), "no target; want target_key: NAME or target_keys: [NAME, ...]")
		return
	case hasOne:
		if _, ok := declared[c.TargetKey]; !ok {
			d.problemf(p("target_key"), "unknown target %q; declared: %s", c.TargetKey, names)
		}
		return
	}
	if len(c.TargetKeys) == 0 {
		d.problemf(p("target_keys"), "target_keys is empty; want at least one target name")
	}
	seen := map[string]int{}
	for j, name := range c.TargetKeys {
		ip := index(p("target_keys"), j)
		if first, dup := seen[name]; dup {
			d.problemf(ip, "target %q repeats target_keys[%d]; want each target once in a chain", name, first)
			continue
		}
		seen[name] = j
		if _, ok := declared[name]; !ok {
			d.problemf(ip, "unknown target %q; declared: %s", name, names)
		}
	}
}

// validateModelList checks a models list (a target's or a client key's) at
// YAML path mp: exact ids or a prefix ending in a single *, no empty entry,
// no surrounding spaces; an empty, non-nil list is reported with ifEmpty.
func (d *decoder) validateModelList(mp string, models []string, ifEmpty string) {
	if models != nil && len(models) == 0 {
		d.problemf(mp, "%s", ifEmpty)
	}
	for j, m := range models {
		ip := index(mp, j)
		switch star := strings.IndexByte(m, '*'); {
		case m == "":
			d.problemf(ip, "model entry is empty; want an exact model id or a prefix ending in *")
		case strings.TrimSpace(m) != m:
			d.problemf(ip, "%s has surrounding spaces; want the model id without them", quoteShort(m))
		case star >= 0 && star != len(m)-1:
			d.problemf(ip, "%s has * before its end; want an exact model id or a prefix ending in a single *", quoteShort(m))
		}
	}
}
