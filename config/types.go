// Package config loads and validates Switchyard's YAML configuration
// (docs/configuration.md, Configuration reference). Loading has four phases: a strict decode of the YAML syntax tree
// (unknown or duplicate keys and wrong types are problems with line:col),
// ${VAR} interpolation of string values, defaults, and a semantic pass. Every
// problem of every phase is collected with its YAML path and returned at once
// as an *Error. Compiling rules into a routing table is the router's job
// (see Config.RouterSpecs); this package knows nothing about requests.
package config

import (
	"time"

	"github.com/switchyard/switchyard/provider"
)

// Config is one loaded, validated and defaulted configuration file.
// A *Config is immutable once Load returns it; it is safe to share.
type Config struct {
	Server   Server   `yaml:"server"`
	Log      Log      `yaml:"log"`
	Strategy Strategy `yaml:"strategy"`
	// Targets is non-empty after a successful load; Targets[0] is the
	// no-match fallback.
	Targets []Target `yaml:"targets"`
	// Auth holds the client keys (docs/client-keys.md); no keys = an open gateway.
	Auth Auth `yaml:"auth"`
	// Quotas is where rate limits and budgets are counted (config/quotas.go).
	Quotas Quotas `yaml:"quotas"`
	// Audit is the signed audit log; off when Audit.Path is "".
	Audit Audit `yaml:"audit"`
	// Admin and Tracing are the console and OpenTelemetry blocks (see observability.go).
	Admin   Admin   `yaml:"admin"`
	Tracing Tracing `yaml:"tracing"`

	// File is the path the config was read from ("" when parsed from memory).
	File string `yaml:"-"`
	// Hash is the hex SHA-256 of the raw file bytes before interpolation.
	Hash string `yaml:"-"`
}

// Server holds the listener settings.
type Server struct {
	// Listen is the address to serve on. Default "127.0.0.1:8080".
	Listen string `yaml:"listen"`
	// MaxRequestBytes caps a request body; larger bodies get 413.
	// Default 10 MiB.
	MaxRequestBytes int `yaml:"max_request_bytes"`
	// RequestTimeout bounds a whole request (for a stream, until its first
	// byte). Default 300s.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// ShutdownTimeout bounds the drain on SIGTERM, counted from the moment
	// the listener closes (after DrainDelay). Default 30s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// DrainDelay is how long the listener keeps accepting after SIGTERM
	// turned /readyz to 503, so a load balancer can stop sending first.
	// 0 to MaxDrainDelay; default 0 (close at once). Read at SIGTERM.
	DrainDelay time.Duration `yaml:"drain_delay"`
	// ConfigWatch, when above 0, is how often the daemon hashes the config
	// file and reloads it (as SIGHUP does) when the content changed.
	// 0 (default) = off; else MinConfigWatch to MaxConfigWatch. Reloadable:
	// the interval after each check is the one of the configuration served.
	ConfigWatch time.Duration `yaml:"config_watch"`
	// ReduceMemoryUsage returns each keep-alive connection's buffers to a
	// pool between requests: 10,000 idle client connections that each
	// carried a chat completion measured 106 MiB RSS instead of 230 MiB
	// (66 instead of 173 MiB after /healthz only), for about 8% more CPU per
	// request (1.23x vs
	// 1.14x the bare proxy's) and one allocation per request. For very
	// large idle client pools. Default false. Restart-only.
	ReduceMemoryUsage bool `yaml:"reduce_memory_usage"`
	// AllowedHosts are the Host names (no port; matched case-insensitively,
	// any port) a connection accepted on a loopback address also accepts
	// besides localhost, 127.x.x.x and [::1] (DNS rebinding). nil = none.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowedOrigins are the browser origins ("https://app.example.com",
	// lowercased at load) whose requests are served; a request with any
	// other Origin header is 403. nil = none.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// BatchServer holds the batch APIs' keys (config/batch.go).
	BatchServer `yaml:",inline"`
	// WebSocket holds the limits of Responses API sockets (GET
	// /v1/responses upgraded; docs/api.md, Responses over WebSocket).
	WebSocket WebSocket `yaml:"websocket"`
}

// WebSocket holds the limits of a Responses API socket. Both are read for
// each message, so a reload applies to open sockets from their next one.
type WebSocket struct {
	// MaxMessageBytes caps one client message; a larger one is answered
	// with an error event and the socket is closed (1009). A socket
	// remembers at most 4x this of its last response (and never more
	// than MaxRequestBytes). Default 16 MiB;
	// MinWebSocketMessageBytes to MaxWebSocketMessageBytes.
	MaxMessageBytes int `yaml:"max_message_bytes"`
	// IdleTimeout closes a socket that has carried no message and no
	// response for this long. Default 5m; MinWebSocketIdle to
	// MaxWebSocketIdle.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
}

// Log holds logging settings.
type Log struct {
	// Level is debug, info, warn or error. Default "info".
	Level string `yaml:"level"`
	// Format is json or console. Default "json".
	Format string `yaml:"format"`
	// AccessLog turns the one-line-per-request log on. Default true.
	AccessLog bool `yaml:"access_log"`
}

// Strategy is the routing strategy block (ferrogw-compatible).
type Strategy struct {
	// Mode is the strategy mode; only "conditional" is known. Required.
	Mode string `yaml:"mode"`
	// Conditions are evaluated in order; the first match wins. At least one
	// in conditional mode.
	Conditions []Condition `yaml:"conditions"`
}

// Condition keys (docs/configuration.md, Configuration reference).
const (
	KeyModel       = "model"
	KeyModelPrefix = "model_prefix"
	KeyUser        = "user"
	KeyStream      = "stream"
	KeyHasTools    = "has_tools"
	KeyMetadata    = "metadata"
)

// Condition is one routing rule.
type Condition struct {
	// Key is one of the Key* constants.
	Key string `yaml:"key"`
	// Field names the metadata entry; set exactly when Key is "metadata".
	Field string `yaml:"field"`
	// Value is the value compared, as written ("true"/"false" for stream and
	// has_tools). YAML numbers keep their literal text (1.0 is "1.0"); YAML
	// booleans become "true"/"false" whatever their spelling.
	Value string `yaml:"value"`
	// TargetKey names a single target; exclusive with TargetKeys.
	TargetKey string `yaml:"target_key"`
	// TargetKeys names an ordered chain; exclusive with TargetKey.
	TargetKeys []string `yaml:"target_keys"`

	// Line is the 1-based line of the condition in the file (0 if unknown).
	Line int `yaml:"-"`
}

// Chain returns the condition's target names in order: [TargetKey] or
// TargetKeys.
func (c *Condition) Chain() []string {
	if c.TargetKey != "" {
		return []string{c.TargetKey}
	}
	return c.TargetKeys
}

// Providers (docs/providers.md); the registry in package provider holds
// what each serves and accepts.
const (
	ProviderOpenAI    = provider.OpenAI
	ProviderAnthropic = provider.Anthropic
	ProviderBedrock   = provider.Bedrock
	ProviderAzure     = provider.Azure
	ProviderVertex    = provider.Vertex
	ProviderGemini    = provider.Gemini
)

// Target is one upstream deployment.
type Target struct {
	// VirtualKey is the unique, non-empty name rules use.
	VirtualKey string `yaml:"virtual_key"`
	// Provider is openai, anthropic, bedrock, azure, vertex or gemini.
	// Default: VirtualKey when it names a provider.
	Provider string `yaml:"provider"`
	// BaseURL defaults to <PROVIDER>_BASE_URL from the environment, then the
	// provider's public endpoint (bedrock: from Region). Never ends in "/".
	BaseURL string `yaml:"base_url"`
	// APIKey defaults to <PROVIDER>_API_KEY from the environment, but only
	// when BaseURL was defaulted too (and, for bedrock, no AWS keys are set):
	// a target with an explicit base_url never receives the provider's
	// environment key. "" = send no credential. Secret: never logged.
	APIKey string `yaml:"api_key"`
	// Region is the AWS region (bedrock) or the Google Cloud region
	// (vertex: europe-west4…, or global).
	Region string `yaml:"region"`
	// AWSAccessKeyID, AWSSecretAccessKey and AWSSessionToken are SigV4
	// credentials (bedrock only). Secret: never logged.
	AWSAccessKeyID     string `yaml:"aws_access_key_id"`
	AWSSecretAccessKey string `yaml:"aws_secret_access_key"`
	AWSSessionToken    string `yaml:"aws_session_token"`
	// AnthropicBetas are the anthropic-beta flags a bedrock or vertex
	// target passes to Claude on the messages surface (docs/providers.md,
	// Claude Code on Bedrock; Claude Code on Vertex). nil = the provider's
	// default (provider.BedrockAnthropicBetas, provider.VertexAnthropicBetas);
	// empty = none.
	AnthropicBetas []string `yaml:"anthropic_betas"`
	// Cloud holds the azure and vertex keys (config/cloud.go).
	Cloud `yaml:",inline"`
	// Models lists exact ids and "prefix*" patterns served. nil = any model;
	// never empty but non-nil after a successful load (models: [] is refused).
	Models []string `yaml:"models"`
	// ModelMap maps a visible model id to the id sent upstream. nil = none.
	ModelMap map[string]string `yaml:"model_map"`
	// Timeout bounds one attempt (a stream: until its first byte). Default 60s.
	Timeout time.Duration `yaml:"timeout"`
	// Residency is the target's residency label (docs/residency.md); "" = none.
	Residency string `yaml:"residency"`

	Retry          Retry          `yaml:"retry"`
	CircuitBreaker CircuitBreaker `yaml:"circuit_breaker"`
	Concurrency    Concurrency    `yaml:"concurrency"`
	// Limits is the provider's own quota for this credential; zero = none.
	// Prices are USD per 1M tokens by model id or prefix*; nil = none.
	Limits Limits           `yaml:"limits"`
	Prices map[string]Price `yaml:"prices"`
	// BatchPrices are the prices of stored batches, keyed like Prices;
	// nil = half of Prices (docs/batches.md).
	BatchPrices map[string]Price `yaml:"batch_prices"`

	// Line is the 1-based line of the target in the file (0 if unknown).
	Line int `yaml:"-"`
}

// Retry controls re-asking the same member before the walk moves on.
type Retry struct {
	// Attempts is the total tries on this member. Default 1.
	Attempts int `yaml:"attempts"`
	// OnStatusCodes, if non-empty, replaces the default retryable set
	// (408, 5xx). Transport errors and timeouts always retry. A 429 is never
	// retried on the same member, listed or not: it parks the target.
	OnStatusCodes []int `yaml:"on_status_codes"`
	// InitialBackoffMs is the first backoff (full jitter, doubling).
	// Default 100.
	InitialBackoffMs int `yaml:"initial_backoff_ms"`
}

// CircuitBreaker configures the per-target breaker (docs/routing.md, 7).
type CircuitBreaker struct {
	// FailureThreshold is the consecutive counted failures that open it.
	// Default 5.
	FailureThreshold int `yaml:"failure_threshold"`
	// SuccessThreshold is the half-open successes that close it. Default 1.
	SuccessThreshold int `yaml:"success_threshold"`
	// MaxHalfThreshold is the concurrent half-open probes. Default 1.
	MaxHalfThreshold int `yaml:"max_half_threshold"`
	// Timeout is the time open before half-open. Default 30s.
	Timeout time.Duration `yaml:"timeout"`
}

// Concurrency bounds in-flight attempts per target.
type Concurrency struct {
	// MaxConcurrency is the in-flight attempts. Default 256.
	MaxConcurrency int `yaml:"max_concurrency"`
	// QueueSize is the waiters beyond MaxConcurrency; full = saturated.
	// Default 1000.
	QueueSize int `yaml:"queue_size"`
}
