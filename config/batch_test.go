package config

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/router"
)

func TestBatchServerKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := mustParse(t, minimal+`server:
  public_url: https://llm.example.com/
  spool_dir: `+dir+`
  max_batch_file_bytes: 1048576
  batch_retention: 24h
  unknown_file_ids: refuse
`, noEnv)
	b := cfg.Server.BatchServer
	if b.PublicURL != "https://llm.example.com" || b.SpoolDir != dir || b.MaxBatchFileBytes != 1<<20 ||
		b.MaxSpoolBytes != 4<<20 || b.BatchRetention != 24*time.Hour || !b.RefusesUnknownFileIDs() {
		t.Fatalf("batch keys = %+v", b)
	}
	// A Config built by hand has the defaults.
	var zero BatchServer
	if zero.FileLimit() != 200<<20 || zero.SpoolLimit() != 800<<20 || zero.Retention() != 35*24*time.Hour || zero.RefusesUnknownFileIDs() {
		t.Fatalf("defaults: %d %d %s", zero.FileLimit(), zero.SpoolLimit(), zero.Retention())
	}
}

func TestBatchServerProblems(t *testing.T) {
	for _, c := range []struct {
		yaml, path, msg string
	}{
		{"  public_url: ftp://x\n", "server.public_url", "is not an http(s) URL"},
		{"  public_url: https://u:p@x\n", "server.public_url", "without user"},
		{"  spool_dir: relative/dir\n", "server.spool_dir", "not an absolute path"},
		{"  spool_dir: /nonexistent/switchyard-spool\n", "server.spool_dir", "not an existing directory"},
		{"  max_batch_file_bytes: 0\n", "server.max_batch_file_bytes", "out of range"},
		{"  max_batch_file_bytes: 1048576\n  max_spool_bytes: 1000\n", "server.max_spool_bytes", "below server.max_batch_file_bytes"},
		{"  batch_retention: 1m\n", "server.batch_retention", "out of range"},
		{"  unknown_file_ids: deny\n", "server.unknown_file_ids", "want allow (the default) or refuse"},
		{"  max_batch_fil_bytes: 1\n", "server.max_batch_fil_bytes", "unknown key"},
	} {
		ps := problemsOf(t, minimal+"server:\n"+c.yaml, noEnv)
		if len(ps) != 1 || ps[0].Path != c.path || !strings.Contains(ps[0].Message, c.msg) || ps[0].Line == 0 {
			t.Errorf("%q: problems %v; want one at %s saying %q", c.yaml, ps, c.path, c.msg)
		}
	}
}

func TestBatchPricesAndSurfaces(t *testing.T) {
	cfg := mustParse(t, `strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: a}
targets:
  - virtual_key: a
    provider: openai
    batch_prices: {m: {input: 1, output: 2}}
  - {virtual_key: az, provider: azure, base_url: "https://x.openai.azure.com/openai/v1", api_key: k}
  - {virtual_key: classic, provider: azure, base_url: "https://x.openai.azure.com", api_key: k, azure_api_version: 2024-10-21}
  - {virtual_key: claude, provider: anthropic}
  - {virtual_key: bed, provider: bedrock, region: us-east-1, api_key: k}
`, noEnv)
	if p := cfg.Targets[0].BatchPrices["m"]; p.Input != 1 || p.Output != 2 {
		t.Fatalf("batch_prices = %+v", cfg.Targets[0].BatchPrices)
	}
	openAI := router.SurfaceSet(1<<router.SurfaceChat | 1<<router.SurfaceCompletions | 1<<router.SurfaceEmbeddings | 1<<router.SurfaceResponses)
	for i, want := range []router.SurfaceSet{openAI, openAI, 0, 1 << router.SurfaceMessages, 0} {
		if got := cfg.Targets[i].BatchSurfaces(); got != want {
			t.Errorf("%s: batch surfaces %b; want %b", cfg.Targets[i].VirtualKey, got, want)
		}
	}
	ps := problemsOf(t, minimal+"    batch_prices: {m: {input: 1}}\n", noEnv)
	if len(ps) != 1 || !strings.Contains(ps[0].Path, "batch_prices") || !strings.Contains(ps[0].Message, "no output price") {
		t.Fatalf("a batch price without output: %v", ps)
	}
}

func TestBatchWarnings(t *testing.T) {
	if w := mustParse(t, minimal, noEnv).BatchWarnings(); len(w) != 0 {
		t.Fatalf("warnings by default: %v", w)
	}
	w := mustParse(t, minimal+"server: {reduce_memory_usage: true}\n", noEnv).BatchWarnings()
	if len(w) != 1 || !strings.Contains(w[0].Message, "held to server.max_request_bytes") {
		t.Fatalf("reduce_memory_usage warning: %v", w)
	}
}
