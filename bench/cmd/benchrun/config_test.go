package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/config"
)

// TestGeneratedConfigsLoad keeps the generated configs in step with the
// config package: a schema change would otherwise only show when
// `make bench` skips the Switchyard rows.
func TestGeneratedConfigsLoad(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }

	rules := make([][2]string, 10000)
	for i := range rules {
		rules[i] = [2]string{fmt.Sprintf("model-%05d", i), "primary"}
	}
	y := gatewayYAML("127.0.0.1:18080", false, []gwTarget{{name: "primary", baseURL: "http://127.0.0.1:9001/v1"}}, rules)
	c, err := config.Parse("many.yaml", []byte(y), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Strategy.Conditions) != 10000 || c.Strategy.Conditions[9999].Value != "model-09999" ||
		c.Server.Listen != "127.0.0.1:18080" || c.Log.AccessLog || c.Targets[0].BaseURL != "http://127.0.0.1:9001/v1" ||
		c.Targets[0].APIKey != upstreamAPIKey || c.Server.ReduceMemoryUsage {
		t.Fatalf("10k config: %+v", c.Server)
	}

	// The idle-connection measurement's second Switchyard.
	y = gatewayYAML("127.0.0.1:18082", true, []gwTarget{{name: "primary", baseURL: "http://127.0.0.1:9001/v1"}}, rules[:1])
	c, err = config.Parse("reduce.yaml", []byte(y), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Server.ReduceMemoryUsage || c.Server.Listen != "127.0.0.1:18082" || len(c.Strategy.Conditions) != 1 {
		t.Fatalf("reduce_memory_usage config: %+v, %d rules", c.Server, len(c.Strategy.Conditions))
	}

	// The client-keys row: the key every scenario presents is the one
	// configured, so that row measures accepted requests, not 401s.
	y = gatewayYAML("127.0.0.1:18083", false, []gwTarget{{name: "primary", baseURL: "http://127.0.0.1:9001/v1"}}, rules[:1]) + clientKeysYAML
	c, err = config.Parse("keys.yaml", []byte(y), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Auth.Keys) != 1 || c.Auth.Keys[0].Digest != sha256.Sum256([]byte(benchClientKey)) || authHeader[0][1] != "Bearer "+benchClientKey {
		t.Fatalf("client-keys config: %+v", c.Auth)
	}

	y = gatewayYAML("127.0.0.1:18081", false, []gwTarget{
		{name: "primary", baseURL: "http://127.0.0.1:9001/v1", failureThreshold: 1_000_000_000},
		{name: "secondary", baseURL: "http://127.0.0.1:9002/v1"},
	}, [][2]string{{"bench-model", "primary,secondary"}})
	c, err = config.Parse("failover.yaml", []byte(y), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	chain := c.Strategy.Conditions[0].Chain()
	if len(chain) != 2 || chain[0] != "primary" || chain[1] != "secondary" ||
		c.Targets[0].CircuitBreaker.FailureThreshold != 1_000_000_000 || c.Targets[1].CircuitBreaker.FailureThreshold != config.DefaultFailureThreshold {
		t.Fatalf("failover config: chain %v, thresholds %d %d", chain, c.Targets[0].CircuitBreaker.FailureThreshold, c.Targets[1].CircuitBreaker.FailureThreshold)
	}
}

// TestConfigNotAcceptedSkips: a binary that refuses a row's config (a
// feature not merged yet) makes that row's start fail with "config not
// accepted" and the validator's message, never start the process.
func TestConfigNotAcceptedSkips(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "switchyard")
	script := "#!/bin/sh\nif [ \"$1\" = validate ]; then echo \"$3:18:1: tracing: unknown key\"; exit 1; fi\necho started >" + dir + "/started\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b := &bench{ctx: context.Background(), tmp: dir, syBin: bin}
	_, err := b.feature("tracing sample_ratio 0.01", gwProc{appendYAML: "tracing:\n  sample_ratio: 0.01\n"}, gwTarget{name: "primary", baseURL: "http://127.0.0.1:9/v1"})
	if err == nil || err.Error() != "config not accepted: 18:1: tracing: unknown key" {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
		t.Fatal("the gateway was started with a config it refused")
	}
	y, err := os.ReadFile(filepath.Join(dir, "tracing-sample_ratio-0.01.yaml"))
	if err != nil || !strings.HasSuffix(string(y), "tracing:\n  sample_ratio: 0.01\n") {
		t.Fatalf("config file: %q %v", y, err)
	}
}

// TestFeatureConfigsLoad keeps the feature rows' blocks in step with the
// config package, so a schema change fails here instead of turning a row
// into "skipped: config not accepted".
func TestFeatureConfigsLoad(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "BENCH_AUDIT_KEY" {
			return "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", true // a 32-byte seed
		}
		return "", false
	}
	target := gwTarget{name: "primary", baseURL: "http://127.0.0.1:9001/v1"}
	eu := target
	eu.extra = residencyTargetYAML
	for name, c := range map[string]struct {
		t     gwTarget
		extra string
	}{
		"limits (memory)": {target, keyYAML + limitsYAML},
		"limits (Redis)":  {target, keyYAML + limitsYAML + redisYAML("127.0.0.1:6390")},
		"residency":       {eu, keyYAML + residencyKeyYAML},
		"audit":           {target, keyYAML + auditYAML(t.TempDir())},
		"tracing":         {target, tracingYAML("127.0.0.1:4318")},
		"admin":           {target, adminYAML("127.0.0.1:9090")},
	} {
		y := gatewayYAML("127.0.0.1:18080", false, []gwTarget{c.t}, oneRuleRules) + c.extra
		if _, err := config.Parse(name+".yaml", []byte(y), env); err != nil {
			t.Errorf("%s: %v\n%s", name, err, y)
		}
	}
}
