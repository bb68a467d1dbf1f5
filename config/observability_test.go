package config

import (
	"crypto/sha256"
	"strings"
	"testing"
)

// The admin and tracing blocks load with their defaults, keep only the
// admin key's digest, and report a bad value with its path, line and what
// is accepted; a console beyond loopback without a key is a load error.
func TestObservabilityLoads(t *testing.T) {
	cfg := mustParse(t, baseYAML, noEnv)
	if cfg.Admin.Enabled() || cfg.Tracing.Enabled() || cfg.Tracing.SampleRatio != 1 {
		t.Fatalf("defaults: admin %+v tracing %+v; want both off, sample_ratio 1", cfg.Admin, cfg.Tracing)
	}
	src := baseYAML + "admin:\n  listen: 0.0.0.0:9090\n  key: ${ADMIN_KEY}\ntracing:\n  otlp_endpoint: http://otel:4318\n  sample_ratio: 0.01\n"
	const key = "adm-0123456789abcdef"
	cfg = mustParse(t, src, envOf(map[string]string{"ADMIN_KEY": key}))
	if !cfg.Admin.HasKey || cfg.Admin.KeyDigest != sha256.Sum256([]byte(key)) || cfg.Admin.Listen != "0.0.0.0:9090" {
		t.Errorf("admin %+v; want the listen and the key's digest", cfg.Admin)
	}
	if cfg.Tracing.OTLPEndpoint != "http://otel:4318" || cfg.Tracing.SampleRatio != 0.01 {
		t.Errorf("tracing %+v", cfg.Tracing)
	}
	// Loopback needs no key.
	cfg = mustParse(t, baseYAML+"admin:\n  listen: 127.0.0.1:0\n", noEnv)
	if !cfg.Admin.Enabled() || cfg.Admin.HasKey {
		t.Errorf("admin %+v; want on without a key", cfg.Admin)
	}
}

func TestObservabilityProblems(t *testing.T) {
	n := strings.Count(baseYAML, "\n") // the added block starts on line n+1
	for _, tc := range []struct {
		block string
		w     want
	}{
		{"admin:\n  listen: 0.0.0.0:9090\n", want{"admin.listen", n + 2, "0.0.0.0", `"0.0.0.0:9090" is not a loopback address and admin.key is not set; set admin.key (every console request then needs it) or listen on 127.0.0.1`}},
		{"admin:\n  listen: \":9090\"\n", want{"admin.listen", n + 2, "", `":9090" is not a loopback address and admin.key is not set; set admin.key (every console request then needs it) or listen on 127.0.0.1`}},
		{"admin:\n  listen: localhost\n", want{"admin.listen", n + 2, "localhost", `"localhost" is not a host:port address; want e.g. "127.0.0.1:9090"`}},
		{"admin:\n  listen: 127.0.0.1:8080\n", want{"admin.listen", n + 2, "127", `"127.0.0.1:8080" is server.listen; want a port of its own for the console`}},
		{"admin:\n  listen: 10.0.0.1:9090\n  key: short\n", want{"admin.key", n + 3, "short", `is 5 characters long; want at least 16 (switchyard keys new makes one)`}},
		{"admin:\n  key: 0123456789abcdef0\n", want{"admin.key", n + 2, "0123", `is set but admin.listen is not; set admin.listen, such as "127.0.0.1:9090", to turn the console on`}},
		{"admin:\n  listne: 127.0.0.1:9\n", want{"admin.listne", n + 2, "listne", `unknown key "listne" in admin; want listen, key`}},
		{"tracing:\n  otlp_endpoint: otel:4318\n", want{"tracing.otlp_endpoint", n + 2, "otel", `"otel:4318" is not an OTLP/HTTP URL; want http(s)://host:port[/path], such as "http://otel-collector:4318"`}},
		{"tracing:\n  otlp_endpoint: http://otel:4318\n  sample_ratio: 1.5\n", want{"tracing.sample_ratio", n + 3, "1.5", `"1.5" is not a number from 0 to 1; want e.g. 0.01 (one trace in a hundred) or 1 (all)`}},
		{"tracing:\n  otlp_endpoint: http://otel:4318\n  sample_ratio: [1]\n", want{"tracing.sample_ratio", n + 3, "[", `got a list; want a number from 0 to 1, such as 0.01`}},
		{"tracing:\n  sample_ratio: 0.5\n", want{"tracing.sample_ratio", n + 2, "0.5", `is set but tracing.otlp_endpoint is not; set the collector's URL, such as "http://otel-collector:4318", to turn tracing on`}},
	} {
		src := baseYAML + tc.block
		checkProblems(t, src, problemsOf(t, src, noEnv), []want{tc.w})
	}
}

// The admin key is a secret: a problem with its ${} expansion never quotes it.
func TestAdminKeyIsSecret(t *testing.T) {
	if !isSecret("admin.key") {
		t.Fatal("admin.key is not treated as a secret")
	}
}
