package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/router"
)

func TestInterpolation(t *testing.T) {
	tpl := func(apiKey string) string {
		return strings.Replace(minimal, "  - virtual_key: openai\n", "  - virtual_key: openai\n    api_key: "+apiKey+"\n", 1)
	}
	env := envOf(map[string]string{"KEY": "sk-123", "EMPTY": "", "PORT": "9090", "ON": "false"})
	ok := []struct{ yaml, want string }{
		{"${KEY}", "sk-123"},
		{"'pre-${KEY}-post'", "pre-sk-123-post"},
		{"${KEY}${KEY}", "sk-123sk-123"},
		{"${EMPTY}", ""},
		{"${UNSET:-fallback}", "fallback"},
		{"${EMPTY:-fallback}", "fallback"},
		{"${KEY:-fallback}", "sk-123"},
		{"${UNSET:-}", ""},
		{"$${KEY}", "${KEY}"},
		{"a$$b", "a$b"},
		{"pa$word", "pa$word"},
		{"cost$", "cost$"},
	}
	for _, tc := range ok {
		cfg := mustParse(t, tpl(tc.yaml), env)
		if got := cfg.Targets[0].APIKey; got != tc.want {
			t.Errorf("api_key: %s = %q; want %q", tc.yaml, got, tc.want)
		}
	}

	bad := []struct{ yaml, msg string }{
		{"${UNSET}", "environment variable UNSET is not set; set it, or write ${UNSET:-} for an empty default"},
		{"x${UNSET}y", "environment variable UNSET is not set; set it, or write ${UNSET:-} for an empty default"},
		{"${KEY", `unterminated "${KEY"; want ${NAME}, ${NAME:-default}, or $${ for a literal "${"`},
		{"${}", `"${}" is not a valid environment reference; want ${NAME} or ${NAME:-default} with NAME made of letters, digits and _`},
		{"${1X}", `"${1X}" is not a valid environment reference; want ${NAME} or ${NAME:-default} with NAME made of letters, digits and _`},
		{"${A B}", `"${A B}" is not a valid environment reference; want ${NAME} or ${NAME:-default} with NAME made of letters, digits and _`},
	}
	for _, tc := range bad {
		src := minimal + "log: {level: '" + tc.yaml + "'}\n"
		checkProblems(t, src, problemsOf(t, src, env), []want{{"log.level", 7, "'", tc.msg}})
	}

	// Every unset variable is reported, each with its own path and line.
	src := `strategy:
  mode: ${MODE}
  conditions:
    - {key: model, value: "${MODEL}", target_key: openai}
targets:
  - virtual_key: openai
`
	checkProblems(t, src, problemsOf(t, src, noEnv), []want{
		{"strategy.mode", 2, "${MODE}", "environment variable MODE is not set; set it, or write ${MODE:-} for an empty default"},
		{"strategy.conditions[0].value", 4, `"${MODEL}"`, "environment variable MODEL is not set; set it, or write ${MODEL:-} for an empty default"},
	})

	// Numbers, booleans and durations may come from the environment too.
	src = minimal + "server: {listen: \"127.0.0.1:${PORT}\", max_request_bytes: \"${PORT}\", request_timeout: \"${PORT}ms\"}\nlog: {access_log: \"${ON}\"}\n"
	cfg := mustParse(t, src, env)
	if cfg.Server.Listen != "127.0.0.1:9090" || cfg.Server.MaxRequestBytes != 9090 || cfg.Server.RequestTimeout != 9090*time.Millisecond || cfg.Log.AccessLog {
		t.Errorf("server/log from env = %+v %+v", cfg.Server, cfg.Log)
	}
	src = minimal + "server: {max_request_bytes: \"${KEY}\"}\n"
	checkProblems(t, src, problemsOf(t, src, env), []want{
		{"server.max_request_bytes", 7, `"${KEY}"`, `"sk-123" (after ${} expansion) is not an integer; want an integer`},
	})
}

func TestDefaults(t *testing.T) {
	src := `strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: openai}
targets:
  - virtual_key: openai
  - virtual_key: anthropic
  - virtual_key: bedrock
    region: eu-central-1
  - virtual_key: local
    provider: openai
    base_url: http://127.0.0.1:8000/v1/
`
	cfg := mustParse(t, src, noEnv)
	batches := BatchServer{MaxBatchFileBytes: 200 << 20, MaxSpoolBytes: 800 << 20, BatchRetention: 35 * 24 * time.Hour}
	wantServer := Server{Listen: "127.0.0.1:8080", MaxRequestBytes: 10485760, RequestTimeout: 300 * time.Second, ShutdownTimeout: 30 * time.Second,
		WebSocket: WebSocket{MaxMessageBytes: 16 << 20, IdleTimeout: 5 * time.Minute}, BatchServer: batches}
	if !reflect.DeepEqual(cfg.Server, wantServer) {
		t.Errorf("server = %+v; want %+v", cfg.Server, wantServer)
	}
	if want := (Log{Level: "info", Format: "json", AccessLog: true}); cfg.Log != want {
		t.Errorf("log = %+v; want %+v", cfg.Log, want)
	}
	wantProvider := []string{"openai", "anthropic", "bedrock", "openai"}
	wantURL := []string{"https://api.openai.com/v1", "https://api.anthropic.com", "https://bedrock-runtime.eu-central-1.amazonaws.com", "http://127.0.0.1:8000/v1"}
	for i, tg := range cfg.Targets {
		if tg.Provider != wantProvider[i] || tg.BaseURL != wantURL[i] {
			t.Errorf("targets[%d] provider, base_url = %q, %q; want %q, %q", i, tg.Provider, tg.BaseURL, wantProvider[i], wantURL[i])
		}
		if tg.Timeout != 60*time.Second {
			t.Errorf("targets[%d] timeout = %v; want 60s", i, tg.Timeout)
		}
		if want := (Retry{Attempts: 1, InitialBackoffMs: 100}); !reflect.DeepEqual(tg.Retry, want) {
			t.Errorf("targets[%d] retry = %+v; want %+v", i, tg.Retry, want)
		}
		if want := (CircuitBreaker{5, 1, 1, 30 * time.Second}); tg.CircuitBreaker != want {
			t.Errorf("targets[%d] circuit_breaker = %+v; want %+v", i, tg.CircuitBreaker, want)
		}
		if want := (Concurrency{256, 1000}); tg.Concurrency != want {
			t.Errorf("targets[%d] concurrency = %+v; want %+v", i, tg.Concurrency, want)
		}
		if tg.Models != nil || tg.ModelMap != nil || tg.APIKey != "" {
			t.Errorf("targets[%d] models, model_map, api_key = %v, %v, %q; want nil, nil, empty", i, tg.Models, tg.ModelMap, tg.APIKey)
		}
	}

	// reduce_memory_usage is off unless set; true is taken as written.
	if cfg.Server.ReduceMemoryUsage {
		t.Errorf("reduce_memory_usage defaulted to true; want false")
	}
	cfg = mustParse(t, minimal+"server: {reduce_memory_usage: true}\n", noEnv)
	if want := (Server{Listen: DefaultListen, MaxRequestBytes: DefaultMaxRequestBytes, RequestTimeout: DefaultRequestTimeout,
		ShutdownTimeout: DefaultShutdownTimeout, ReduceMemoryUsage: true, BatchServer: batches,
		WebSocket: WebSocket{MaxMessageBytes: DefaultWebSocketMessageBytes, IdleTimeout: DefaultWebSocketIdle}}); !reflect.DeepEqual(cfg.Server, want) {
		t.Errorf("server with reduce_memory_usage: true = %+v; want %+v", cfg.Server, want)
	}

	// server.websocket decodes as written; a key left out keeps its default.
	cfg = mustParse(t, minimal+"server: {websocket: {max_message_bytes: 4096}}\n", noEnv)
	if ws := cfg.Server.WebSocket; ws.MaxMessageBytes != 4096 || ws.IdleTimeout != DefaultWebSocketIdle {
		t.Errorf("server.websocket = %+v; want 4096 bytes, the default idle timeout", ws)
	}

	// drain_delay and config_watch default to 0 (above) and decode as written.
	cfg = mustParse(t, minimal+"server: {drain_delay: 5s, config_watch: 250ms}\n", noEnv)
	if cfg.Server.DrainDelay != 5*time.Second || cfg.Server.ConfigWatch != 250*time.Millisecond {
		t.Errorf("drain_delay, config_watch = %v, %v; want 5s, 250ms", cfg.Server.DrainDelay, cfg.Server.ConfigWatch)
	}

	// Explicit false and zero values are kept, not replaced by defaults.
	cfg = mustParse(t, minimal+"log: {access_log: false}\n", noEnv)
	if cfg.Log.AccessLog {
		t.Errorf("access_log: false decoded as true")
	}
	// null means absent.
	cfg = mustParse(t, minimal+"log: {access_log: ~, level: }\nserver:\n", noEnv)
	if !cfg.Log.AccessLog || cfg.Log.Level != "info" || cfg.Server.Listen != DefaultListen {
		t.Errorf("null values did not keep defaults: %+v %+v", cfg.Log, cfg.Server)
	}
}

// TestCredentialDefaults pins the rule that <PROVIDER>_API_KEY goes only to
// a target whose base URL was defaulted: a secret must not reach an upstream
// it was not issued for.
func TestCredentialDefaults(t *testing.T) {
	src := `strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: openai}
targets:
  - virtual_key: openai
  - virtual_key: vllm
    provider: openai
    base_url: http://10.0.0.11:8000/v1
  - virtual_key: eu
    provider: openai
    base_url: https://eu.example.com/v1
    api_key: eu-key
  - virtual_key: anthropic
  - virtual_key: own-key
    provider: anthropic
    api_key: mine
  - virtual_key: bedrock
    region: us-east-1
  - virtual_key: bedrock-sigv4
    provider: bedrock
    region: us-east-1
    aws_access_key_id: AKID
    aws_secret_access_key: secret
  - virtual_key: empty-url
    provider: openai
    base_url: "${UNSET_URL:-}"
`
	env := envOf(map[string]string{"OPENAI_API_KEY": "sk-openai", "ANTHROPIC_API_KEY": "sk-ant", "BEDROCK_API_KEY": "brk"})
	cfg := mustParse(t, src, env)
	wantKey := map[string]string{
		"openai":        "sk-openai", // defaulted URL: the provider's key
		"vllm":          "",          // explicit URL: never OPENAI_API_KEY
		"eu":            "eu-key",
		"anthropic":     "sk-ant",
		"own-key":       "mine",
		"bedrock":       "brk",
		"bedrock-sigv4": "", // SigV4 keys set: no bearer key added
		"empty-url":     "sk-openai",
	}
	for _, tg := range cfg.Targets {
		if tg.APIKey != wantKey[tg.VirtualKey] {
			t.Errorf("%s api_key = %q; want %q", tg.VirtualKey, tg.APIKey, wantKey[tg.VirtualKey])
		}
	}
	if u := cfg.Targets[7].BaseURL; u != DefaultOpenAIBaseURL {
		t.Errorf("empty base_url became %q; want the default", u)
	}

	// <PROVIDER>_BASE_URL replaces the public endpoint, and then the
	// provider's key goes with it (the operator paired them).
	env = envOf(map[string]string{"OPENAI_BASE_URL": "https://proxy.example.com/v1/", "OPENAI_API_KEY": "sk-openai"})
	cfg = mustParse(t, src, env)
	if tg := cfg.Targets[0]; tg.BaseURL != "https://proxy.example.com/v1" || tg.APIKey != "sk-openai" {
		t.Errorf("openai from env = %q, %q; want proxy URL without trailing slash and sk-openai", tg.BaseURL, tg.APIKey)
	}
	if tg := cfg.Targets[1]; tg.BaseURL != "http://10.0.0.11:8000/v1" || tg.APIKey != "" {
		t.Errorf("vllm = %q, %q; want its own URL and no key", tg.BaseURL, tg.APIKey)
	}

	// A bad URL from the environment names the variable.
	env = envOf(map[string]string{"OPENAI_BASE_URL": "api.example.com"})
	ps := problemsOf(t, minimal, env)
	checkProblems(t, minimal, ps, []want{{"targets[0].base_url", 6, "virtual_key",
		`"api.example.com" is not an http or https URL; want an absolute http(s) URL with a host and no query or fragment, such as https://api.openai.com/v1 (the URL came from OPENAI_BASE_URL)`}})
}

func TestParseSetsFileHashAndLines(t *testing.T) {
	cfg := mustParse(t, baseYAML, noEnv)
	sum := sha256.Sum256([]byte(baseYAML))
	if cfg.File != "test.yaml" || cfg.Hash != hex.EncodeToString(sum[:]) {
		t.Errorf("File, Hash = %q, %q", cfg.File, cfg.Hash)
	}
	if a, b := cfg.Strategy.Conditions[0].Line, cfg.Strategy.Conditions[1].Line; a != 13 || b != 16 {
		t.Errorf("condition lines %d, %d; want 13, 16", a, b)
	}
	if a, b := cfg.Targets[0].Line, cfg.Targets[1].Line; a != 21 || b != 30 {
		t.Errorf("target lines %d, %d; want 21, 30", a, b)
	}
	// The hash is of the raw bytes: the same config with another comment differs.
	other := mustParse(t, baseYAML+"# comment\n", noEnv)
	if other.Hash == cfg.Hash {
		t.Errorf("hash ignores the raw bytes")
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(minimal), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil || cfg.File != path {
		t.Fatalf("Load = %v, %v", cfg, err)
	}
	_, err = Load(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v; want an fs.ErrNotExist I/O error as is", err)
	}
	var ce *Error
	if errors.As(err, &ce) {
		t.Errorf("missing file reported as a config *Error")
	}
	if err := os.WriteFile(path, []byte("targets: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	if !errors.As(err, &ce) || ce.Problems[0].File != path {
		t.Errorf("bad file: %v; want *Error with File %q", err, path)
	}
}

// TestExampleConfigLoads: the shipped example is valid on a fresh machine,
// with no environment variable set, and routes as its comments say.
func TestExampleConfigLoads(t *testing.T) {
	data, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("config.example.yaml", data, noEnv)
	if err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	names := []string{}
	for _, tg := range cfg.Targets {
		names = append(names, tg.VirtualKey)
	}
	if want := []string{"openai", "anthropic", "bedrock", "eu", "vllm-a", "vllm-b", "azure-eu", "vertex-eu", "bedrock-eu"}; !reflect.DeepEqual(names, want) {
		t.Errorf("targets %v; want %v", names, want)
	}
	for _, tg := range cfg.Targets {
		if tg.APIKey != "" {
			t.Errorf("%s has an api_key with no environment set", tg.VirtualKey)
		}
	}
	rules, _ := cfg.RouterSpecs()
	wantRules := []router.RuleSpec{
		{Key: router.KeyMetadata, Field: "tier", Value: "gold", Chain: []int{3}},
		{Key: router.KeyModel, Value: "gpt-4o", Chain: []int{0}},
		{Key: router.KeyModelPrefix, Value: "claude-", Chain: []int{1, 2}},
		{Key: router.KeyUser, Value: "vip", Chain: []int{0}},
		{Key: router.KeyModelPrefix, Value: "meta-llama/", Chain: []int{4, 5}},
		{Key: router.KeyUser, Value: "globex", Chain: []int{3}},
		{Key: router.KeyModelPrefix, Value: "eu-", Chain: []int{6, 7, 8}},
	}
	if !reflect.DeepEqual(rules, wantRules) {
		t.Errorf("rules\n got  %+v\n want %+v", rules, wantRules)
	}
	if u := cfg.Targets[2].BaseURL; u != "https://bedrock-runtime.us-east-1.amazonaws.com" {
		t.Errorf("bedrock base_url %q", u)
	}
}

func TestRouterSpecs(t *testing.T) {
	src := `strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: b}
    - {key: model_prefix, value: claude-, target_keys: [c, a]}
    - {key: user, value: vip, target_key: a}
    - {key: stream, value: true, target_key: c}
    - {key: has_tools, value: false, target_keys: [a]}
    - {key: metadata, field: tier, value: 1.0, target_keys: [b, c, a]}
targets:
  - {virtual_key: a, provider: openai, models: [gpt-4o, "gpt-5*"]}
  - {virtual_key: b, provider: anthropic}
  - {virtual_key: c, provider: bedrock, region: us-east-1, models: [], model_map: {z: z-1, m: m-1}}
`
	// models: [] is refused; drop it for the conversion test.
	src = strings.Replace(src, ", models: []", "", 1)
	cfg := mustParse(t, src, noEnv)
	rules, targets := cfg.RouterSpecs()
	wantRules := []router.RuleSpec{
		{Key: router.KeyModel, Value: "gpt-4o", Chain: []int{1}},
		{Key: router.KeyModelPrefix, Value: "claude-", Chain: []int{2, 0}},
		{Key: router.KeyUser, Value: "vip", Chain: []int{0}},
		{Key: router.KeyStream, Value: "true", Chain: []int{2}},
		{Key: router.KeyHasTools, Value: "false", Chain: []int{0}},
		{Key: router.KeyMetadata, Field: "tier", Value: "1.0", Chain: []int{1, 2, 0}},
	}
	if !reflect.DeepEqual(rules, wantRules) {
		t.Errorf("rules\n got  %+v\n want %+v", rules, wantRules)
	}
	// Every provider serves chat and messages (natively or translated),
	// and responses where it is native or has a translator.
	chatMessages := router.SurfaceSet(1<<router.SurfaceChat|1<<router.SurfaceMessages) | provider.TranslatedSurfaces()
	wantTargets := []router.TargetSpec{
		{Name: "a", Provider: "openai", Surfaces: router.AllSurfaces, Models: []string{"gpt-4o", "gpt-5*"},
			Batch: router.AllSurfaces &^ (1<<router.SurfaceMessages | 1<<router.SurfaceImages)},
		{Name: "b", Provider: "anthropic", Surfaces: chatMessages, Batch: 1 << router.SurfaceMessages},
		{Name: "c", Provider: "bedrock", Surfaces: chatMessages, MappedModels: []string{"m", "z"}},
	}
	if !reflect.DeepEqual(targets, wantTargets) {
		t.Errorf("targets\n got  %+v\n want %+v", targets, wantTargets)
	}
	if targets[1].Models != nil {
		t.Errorf("omitted models must stay nil (any model)")
	}
	// The specs are copies: editing them leaves the config alone.
	targets[0].Models[0] = "changed"
	if cfg.Targets[0].Models[0] != "gpt-4o" {
		t.Errorf("RouterSpecs shares the Models slice with the config")
	}
}

func TestProviderSurfaces(t *testing.T) {
	for _, tc := range []struct {
		provider string
		want     []router.Surface
	}{
		{"openai", []router.Surface{router.SurfaceChat, router.SurfaceCompletions, router.SurfaceEmbeddings, router.SurfaceImages, router.SurfaceResponses, router.SurfaceMessages}},
		{"azure", []router.Surface{router.SurfaceChat, router.SurfaceCompletions, router.SurfaceEmbeddings, router.SurfaceImages, router.SurfaceResponses, router.SurfaceMessages}},
		{"anthropic", []router.Surface{router.SurfaceChat, router.SurfaceMessages}},
		{"bedrock", []router.Surface{router.SurfaceChat, router.SurfaceMessages}},
		{"vertex", []router.Surface{router.SurfaceChat, router.SurfaceMessages}},
		{"gemini", []router.Surface{router.SurfaceChat, router.SurfaceEmbeddings, router.SurfaceMessages}},
		{"mistral", nil},
	} {
		set := ProviderSurfaces(tc.provider)
		for s := router.Surface(0); s < router.NumSurfaces; s++ {
			// responses reaches every provider once it has a translator.
			want := tc.want != nil && s == router.SurfaceResponses && provider.TranslatedSurfaces().Has(s)
			for _, w := range tc.want {
				want = want || w == s
			}
			if set.Has(s) != want {
				t.Errorf("%s serves %v = %v; want %v", tc.provider, s, set.Has(s), want)
			}
		}
	}
}

func TestCRLFAndByteOrderMark(t *testing.T) {
	crlf := strings.ReplaceAll(baseYAML, "\n", "\r\n")
	if cfg := mustParse(t, crlf, noEnv); cfg.Targets[1].Line != 30 || cfg.Strategy.Conditions[0].Value != "gpt-4o" {
		t.Errorf("CRLF config decoded wrongly: line %d, value %q", cfg.Targets[1].Line, cfg.Strategy.Conditions[0].Value)
	}
	bad := strings.Replace(crlf, "level: info", "level: loud", 1)
	checkProblems(t, bad, problemsOf(t, bad, noEnv), []want{{"log.level", 7, "loud", `"loud" is not a log level; want debug, info, warn or error`}})

	bom := "\ufeff" + baseYAML
	cfg := mustParse(t, bom, noEnv)
	sum := sha256.Sum256([]byte(bom))
	if cfg.Hash != hex.EncodeToString(sum[:]) || cfg.Server.MaxRequestBytes != 1024 {
		t.Errorf("BOM config: hash of other bytes or server not decoded (%d)", cfg.Server.MaxRequestBytes)
	}
}

// TestSecretsNeverQuoted: problems about credential values say what is
// wrong without quoting the value (problems are printed and logged).
func TestSecretsNeverQuoted(t *testing.T) {
	const secret = "sk-TOPSECRET"
	for _, key := range []string{"api_key", "aws_access_key_id", "aws_secret_access_key", "aws_session_token"} {
		for _, val := range []string{secret + "${oops", secret + "${bad name}"} {
			src := strings.Replace(baseYAML, "    region: us-east-1\n", "    region: us-east-1\n    "+key+": '"+val+"'\n", 1)
			if key == "aws_access_key_id" || key == "aws_secret_access_key" {
				src = strings.Replace(baseYAML, "    "+key+": ", "    "+key+": '"+val+"'\n    x_"+key+": ", 1)
				src = strings.Replace(src, "    x_"+key+": "+map[string]string{"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"}[key]+"\n", "", 1)
			}
			err := (&Error{Problems: problemsOf(t, src, noEnv)}).Error()
			if strings.Contains(err, "TOPSECRET") || strings.Contains(err, "oops") || strings.Contains(err, "bad name") {
				t.Errorf("%s: problem quotes the secret: %s", key, err)
			}
			if !strings.Contains(err, "targets[1]."+key+": ") || !strings.Contains(err, "secret value") {
				t.Errorf("%s: want a located problem about the secret value, got: %s", key, err)
			}
		}
	}
	// A non-secret value is quoted, to help find the typo.
	src := strings.Replace(minimal, "value: gpt-4o", "value: 'gpt${oops'", 1)
	if err := (&Error{Problems: problemsOf(t, src, noEnv)}).Error(); !strings.Contains(err, `"${oops"`) {
		t.Errorf("non-secret problem does not quote the fragment: %s", err)
	}
}
