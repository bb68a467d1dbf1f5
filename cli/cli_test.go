package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// run calls Main and returns its exit code and outputs.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeConfig writes body to a file in a fresh temp dir and returns its path.
func writeConfig(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// lines splits output into lines, without the final newline.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// wantLines compares output with the expected lines, showing both in full.
func wantLines(t *testing.T, what, got string, want ...string) {
	t.Helper()
	g := lines(got)
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n--- got\n%s\n--- want\n%s", what, strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

// stubServe installs a Serve that records its arguments, restored at the end
// of the test.
func stubServe(t *testing.T, code int) *[]string {
	t.Helper()
	var got []string
	old := Serve
	Serve = func(cfgPath, listen string) int {
		got = append(got, cfgPath, listen)
		return code
	}
	t.Cleanup(func() { Serve = old })
	return &got
}

func TestServeDispatch(t *testing.T) {
	t.Setenv(EnvConfig, "")
	tests := []struct {
		name string
		args []string
		want []string // cfgPath, listen
	}{
		{"no args serves config.yaml", nil, []string{"config.yaml", ""}},
		{"flags first means serve", []string{"-config", "a.yaml", "-listen", "127.0.0.1:9"}, []string{"a.yaml", "127.0.0.1:9"}},
		{"explicit serve", []string{"serve", "-listen=:7"}, []string{"config.yaml", ":7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stubServe(t, 3)
			code, out, errOut := run(t, tt.args...)
			if code != 3 {
				t.Errorf("exit %d, want Serve's 3", code)
			}
			if strings.Join(*got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("Serve called with %q, want %q", *got, tt.want)
			}
			if out != "" || errOut != "" {
				t.Errorf("unexpected output %q %q", out, errOut)
			}
		})
	}
}

func TestServeConfigFromEnv(t *testing.T) {
	t.Setenv(EnvConfig, "/etc/switchyard/prod.yaml")
	got := stubServe(t, 0)
	if code, _, _ := run(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if (*got)[0] != "/etc/switchyard/prod.yaml" {
		t.Fatalf("Serve got config %q, want $%s", (*got)[0], EnvConfig)
	}
	// -config beats the environment.
	*got = nil
	run(t, "serve", "-config", "x.yaml")
	if (*got)[0] != "x.yaml" {
		t.Fatalf("Serve got config %q, want x.yaml", (*got)[0])
	}
}

func TestServeNotBuilt(t *testing.T) {
	old := Serve
	Serve = nil
	t.Cleanup(func() { Serve = old })
	code, out, errOut := run(t, "serve")
	if code != 1 || out != "" || errOut != "serve: not built yet\n" {
		t.Fatalf("got %d %q %q, want 1 and %q on stderr", code, out, errOut, "serve: not built yet\n")
	}
}

func TestUsageErrors(t *testing.T) {
	called := stubServe(t, 0)
	tests := []struct {
		name    string
		args    []string
		wantErr string // first line of stderr
	}{
		{"unknown command", []string{"bogus"}, `switchyard: unknown command "bogus"`},
		{"serve bad flag", []string{"-nope"}, "flag provided but not defined: -nope"},
		{"serve positional", []string{"serve", "extra"}, `switchyard serve: unexpected argument "extra"`},
		{"validate bad flag", []string{"validate", "-strict=maybe"}, `invalid boolean value "maybe" for -strict: parse error`},
		{"validate positional", []string{"validate", "config.yaml"}, `switchyard validate: unexpected argument "config.yaml"`},
		{"explain without model", []string{"explain", "-user", "u"}, "explain: -model is required"},
		{"explain bad surface", []string{"explain", "-model", "m", "-surface", "audio"}, `explain: -surface "audio" is not a surface; want chat, completions, embeddings, images, responses or messages`},
		{"version positional", []string{"version", "now"}, `switchyard version: unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			if first := lines(errOut); len(first) == 0 || first[0] != tt.wantErr {
				t.Errorf("stderr:\n%s\nwant first line %q", errOut, tt.wantErr)
			}
		})
	}
	if len(*called) != 0 {
		t.Fatalf("Serve was called on a usage error: %q", *called)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, out, _ := run(t, args...)
		if code != 0 || !strings.HasPrefix(out, "Usage:\n") || !strings.Contains(out, "switchyard explain") {
			t.Errorf("%q: exit %d, stdout %q", args, code, out)
		}
	}
	// A subcommand's -h prints its flags and exits 0.
	code, _, errOut := run(t, "validate", "-h")
	if code != 0 || !strings.Contains(errOut, "-strict") {
		t.Errorf("validate -h: exit %d, stderr %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v1.2.3"
	code, out, errOut := run(t, "version")
	if code != 0 || out != "switchyard v1.2.3\n" || errOut != "" {
		t.Fatalf("got %d %q %q", code, out, errOut)
	}
}

func TestVersionString(t *testing.T) {
	withMain := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/switchyard/switchyard", Version: v}}
	}
	tests := []struct {
		name string
		set  string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"ldflags wins", "v2.0.0", withMain("v1.0.0"), true, "v2.0.0"},
		{"module version", "", withMain("v1.0.0"), true, "v1.0.0"},
		{"devel build", "", withMain("(devel)"), true, "dev"},
		{"empty module version", "", withMain(""), true, "dev"},
		{"no build info", "", nil, false, "dev"},
	}
	for _, tt := range tests {
		if got := versionString(tt.set, tt.info, tt.ok); got != tt.want {
			t.Errorf("%s: versionString = %q, want %q", tt.name, got, tt.want)
		}
	}
}
