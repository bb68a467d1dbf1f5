package telemetry

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// Secret strings planted in the inputs below; none may reach a log line or
// /metrics.
var secrets = []string{
	"sk-openai-SECRET-1111",
	"sk-ant-SECRET-2222",
	"br-api-key-SECRET-3333",
	"AKIASECRET4444",
	"aws-secret-SECRET-5555",
	"aws-session-SECRET-6666",
	"userinfo-SECRET-7777",
	"query-SECRET-8888",
	"sk-client-SECRET-9999",
	"metadata-SECRET-0000",
}

func secretConfig() *config.Config {
	return &config.Config{
		File: "/etc/switchyard/config.yaml",
		Hash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		Strategy: config.Strategy{Mode: "conditional", Conditions: []config.Condition{
			{Key: config.KeyModelPrefix, Value: "claude-", TargetKeys: []string{"anthropic", "bedrock"}},
		}},
		Targets: []config.Target{
			{VirtualKey: "openai", Provider: "openai", BaseURL: "https://gw:userinfo-SECRET-7777@api.example.com/v1?api-key=query-SECRET-8888", APIKey: "sk-openai-SECRET-1111"},
			{VirtualKey: "anthropic", Provider: "anthropic", BaseURL: "https://api.anthropic.com", APIKey: "sk-ant-SECRET-2222"},
			{VirtualKey: "bedrock", Provider: "bedrock", BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com", Region: "us-east-1",
				AWSAccessKeyID: "AKIASECRET4444", AWSSecretAccessKey: "aws-secret-SECRET-5555", AWSSessionToken: "aws-session-SECRET-6666"},
			{VirtualKey: "bedrock-key", Provider: "bedrock", BaseURL: "https://bedrock-runtime.eu-west-1.amazonaws.com", APIKey: "br-api-key-SECRET-3333"},
		},
	}
}

func assertNoSecret(t *testing.T, what string, out []byte) {
	t.Helper()
	for _, s := range secrets {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("%s contains the secret %q:\n%s", what, s, out)
		}
	}
}

func TestNoSecretReachesLogsOrMetrics(t *testing.T) {
	cfg := secretConfig()
	pool := upstream.NewPool()
	var targets []*upstream.Target
	for i := range cfg.Targets {
		tg, err := pool.Target(&cfg.Targets[i])
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}

	// Control: the runtime targets really carry the secrets, and the check
	// below does find one when a Target is logged the wrong way.
	var control bytes.Buffer
	cl := zerolog.New(&control)
	cl.Info().Interface("target", targets[0]).Msg("")
	if !bytes.Contains(control.Bytes(), []byte("sk-openai-SECRET-1111")) {
		t.Fatalf("control failed: logging the Target struct did not expose its key; the test proves nothing\n%s", control.String())
	}

	// A client request as the hot path sees it: credentials in headers.
	var req fasthttp.Request
	req.Header.Set("Authorization", "Bearer sk-client-SECRET-9999")
	req.Header.Set("X-Gateway-Metadata", `{"tier":"metadata-SECRET-0000"}`)
	req.Header.Set("X-Request-Id", "req-42")
	req.SetBodyString(`{"model":"claude-3-5-sonnet","messages":[]}`)

	for _, format := range []string{"json", "console"} {
		var buf bytes.Buffer
		l, err := NewLogger("debug", format, &buf)
		if err != nil {
			t.Fatal(err)
		}
		l.Info().Object("config", ConfigFields(cfg)).Msg("config loaded")
		for _, tg := range targets {
			l.Warn().Object("target", TargetFields(tg)).Msg("circuit opened")
			l.Debug().EmbedObject(TargetFields(tg)).Msg("attempt")
		}
		NewAccessLog(l).Log(&Entry{
			RequestID: req.Header.Peek("X-Request-Id"),
			Surface:   router.SurfaceChat,
			Model:     []byte("claude-3-5-sonnet"),
			Rule:      0,
			Walked:    []string{targets[1].Name, targets[2].Name},
			Target:    targets[2].Name,
			Attempts:  2,
			Status:    200,
			Latency:   time.Second,
			Class:     upstream.ClassOK,
		})
		out := buf.Bytes()
		assertNoSecret(t, format+" log", out)
		// What the operator does need is there.
		for _, want := range []string{"api.example.com", "bedrock-runtime.us-east-1.amazonaws.com", "anthropic", "0123456789ab", "req-42"} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("%s log lacks %q:\n%s", format, want, out)
			}
		}
	}

	m := NewMetrics()
	m.SetTargets(targets)
	for _, tg := range targets {
		m.Attempt(tg, upstream.ClassOK, 200, time.Millisecond)
	}
	m.Loaded(cfg.Hash, time.Now())
	var mb bytes.Buffer
	m.WritePrometheus(&mb)
	assertNoSecret(t, "/metrics", mb.Bytes())
}

func TestTargetAndConfigFieldsShape(t *testing.T) {
	cfg := secretConfig()
	tg, err := upstream.NewPool().Target(&cfg.Targets[0])
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	l := zerolog.New(&buf)
	l.Info().Object("target", TargetFields(tg)).Object("config", ConfigFields(cfg)).Msg("")
	l.Info().Object("target", TargetFields(nil)).Object("config", ConfigFields(nil)).Msg("")
	lines := decodeLines(t, &buf)
	wantTarget := map[string]any{"name": "openai", "provider": "openai", "host": "api.example.com"}
	if !reflect.DeepEqual(lines[0]["target"], wantTarget) {
		t.Errorf("target fields %v, want %v", lines[0]["target"], wantTarget)
	}
	c := lines[0]["config"].(map[string]any)
	if c["file"] != cfg.File || c["hash"] != "0123456789ab" || c["conditions"] != 1.0 {
		t.Errorf("config fields %v", c)
	}
	if ts := c["targets"].([]any); len(ts) != 4 || !reflect.DeepEqual(ts[2], map[string]any{
		"name": "bedrock", "provider": "bedrock", "host": "bedrock-runtime.us-east-1.amazonaws.com"}) {
		t.Errorf("config targets %v", c["targets"])
	}
	if !reflect.DeepEqual(lines[1]["target"], map[string]any{}) || !reflect.DeepEqual(lines[1]["config"], map[string]any{}) {
		t.Errorf("nil target/config: %v", lines[1])
	}
}

// Entry must never grow a field that could carry a header, a body or a
// credential. A new field fails this test on purpose: check it cannot hold
// a secret, then add it here.
func TestEntryHasNoRoomForSecrets(t *testing.T) {
	want := []string{
		"RequestID []uint8", "Surface router.Surface", "Model []uint8", "Rule int", "Walked []string",
		"Target string", "Attempts int", "Status int", "Latency time.Duration", "TTFB time.Duration",
		"Stream bool", "Class provider.Class",
		// The key's name (never the key), token counts, and the trace id
		// (validated hex from the client's traceparent).
		"Key string", "Usage provider.Usage", "TraceID []uint8", "Spend int64", "HasSpend bool",
		// The walk's steps point at runtime targets, which hold
		// credentials: only the audit log reads them, and it writes a
		// target's name, provider, base URL host and label (audit, and
		// its test that no credential reaches a line). The config hash is
		// a SHA-256.
		"Steps []telemetry.Step", "ConfigHash string",
		// A batch API call's API and operation (constants) and the file or
		// batch id the provider handed out or the client named.
		"Batch telemetry.BatchCall",
		// The tool types a translation dropped, as the gateway's own
		// X-Gateway-Dropped-Tools header names them (web_search, …):
		// names from the request's tools array, never a header or a
		// credential.
		"DroppedTools []uint8",
	}
	typ := reflect.TypeFor[Entry]()
	var got []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		got = append(got, f.Name+" "+f.Type.String())
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("Entry fields changed:\n got %v\nwant %v", got, want)
	}
}
