package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// asCLI, set in the environment, makes the test binary run as switchyard:
// TestDocsCIExample puts it on PATH under that name so the documented
// script calls this package's Main, without building the gateway.
const asCLI = "SWITCHYARD_TEST_RUN_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// docBlock returns the fenced block that follows the marker comment
// "<!-- name: …" in doc.
func docBlock(t *testing.T, doc, name string) string {
	t.Helper()
	i := strings.Index(doc, "<!-- "+name+":")
	if i < 0 {
		t.Fatalf("docs/routing.md has no %q block", name)
	}
	rest := doc[i:]
	open := strings.Index(rest, "```")
	body := rest[open:]
	body = body[strings.Index(body, "\n")+1:]
	end := strings.Index(body, "```")
	if open < 0 || end < 0 {
		t.Fatalf("docs/routing.md: the %q block is not fenced", name)
	}
	return body[:end]
}

// The CI example of docs/routing.md (Explain as data), run as written: the
// script passes on the config shown, fails with the output shown when a
// pull request moves the claude- rule first, and fails when explain cannot
// load the config. It runs the documented script with sh and jq (CI
// installs jq; elsewhere the test is skipped without it).
func TestDocsCIExample(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but jq is not installed: .ci/run must install it")
		}
		t.Skip("jq is not installed (apt-get install jq; CI installs it and runs this test)")
	}
	raw, err := os.ReadFile("../docs/routing.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	cfg, script, wantFail := docBlock(t, doc, "ci-example-config"), docBlock(t, doc, "ci-example-script"), docBlock(t, doc, "ci-example-output")

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "switchyard")); err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(dir, "eu-residency.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	check := func(config string) (int, string, string) {
		path := filepath.Join(t.TempDir(), "gateway.yaml")
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", scriptPath, path)
		cmd.Env = append(os.Environ(), asCLI+"=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errOut.String()
	}

	if code, out, errOut := check(cfg); code != 0 || out != "" || errOut != "" {
		t.Fatalf("the documented config: exit %d\n%s%s", code, out, errOut)
	}

	// The pull request: the claude- rule moved above the user rule.
	lines := strings.Split(cfg, "\n")
	var userRule, claudeRule int
	for i, l := range lines {
		switch {
		case strings.Contains(l, "{key: user, value: globex"):
			userRule = i
		case strings.Contains(l, "{key: model_prefix, value: claude-"):
			claudeRule = i
		}
	}
	if userRule == 0 || claudeRule != userRule+1 {
		t.Fatalf("the documented config's rules moved: user at line %d, claude- at %d", userRule, claudeRule)
	}
	lines[userRule], lines[claudeRule] = lines[claudeRule], lines[userRule]
	code, out, errOut := check(strings.Join(lines, "\n"))
	if code != 1 || out != "" || errOut != wantFail {
		t.Errorf("after the pull request: exit %d, stdout %q, stderr\n%s\nwant exit 1 and the documented output\n%s", code, out, errOut, wantFail)
	}

	// A config explain cannot load fails the job too, rather than passing
	// on an empty report.
	if code, _, errOut := check(cfg + "bogus: key\n"); code == 0 || !strings.Contains(errOut, "bogus") {
		t.Errorf("a config that does not load: exit %d, stderr %q; want a failure naming the problem", code, errOut)
	}
}
