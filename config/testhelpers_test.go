package config

import (
	"errors"
	"strings"
	"testing"
)

// noEnv is a lookup with no variable set.
func noEnv(string) (string, bool) { return "", false }

// envOf returns a lookup over m.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// problemsOf parses src and returns its problems; it fails the test when
// Parse succeeds or returns anything but a well-formed *Error.
func problemsOf(t *testing.T, src string, env func(string) (string, bool)) []Problem {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(src), env)
	if err == nil {
		t.Fatalf("Parse succeeded; want problems\n%s", src)
	}
	if cfg != nil {
		t.Errorf("Parse returned a config with an error")
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v; want *Error", err, err)
	}
	if len(e.Problems) == 0 {
		t.Fatalf("*Error with no problems")
	}
	for _, p := range e.Problems {
		if p.File != "test.yaml" {
			t.Errorf("problem %v: File %q; want test.yaml", p, p.File)
		}
	}
	return e.Problems
}

// mustParse parses src and fails the test on any error.
func mustParse(t *testing.T, src string, env func(string) (string, bool)) *Config {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(src), env)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, src)
	}
	return cfg
}

// want describes one expected problem. At is text on line Line whose first
// occurrence marks the expected column ("@@text": its last occurrence; "" =
// column not checked).
type want struct {
	Path string
	Line int
	At   string
	Msg  string
}

func checkProblems(t *testing.T, src string, got []Problem, wants []want) {
	t.Helper()
	lines := strings.Split(src, "\n")
	if len(got) != len(wants) {
		t.Errorf("got %d problems; want %d:\n%s", len(got), len(wants), (&Error{Problems: got}).Error())
	}
	for i := 0; i < len(got) && i < len(wants); i++ {
		g, w := got[i], wants[i]
		if g.Path != w.Path || g.Line != w.Line || g.Message != w.Msg {
			t.Errorf("problem %d:\n got  %d %s: %s\n want %d %s: %s", i, g.Line, g.Path, g.Message, w.Line, w.Path, w.Msg)
			continue
		}
		if w.At != "" {
			if w.Line > len(lines) {
				t.Fatalf("bad test: line %d beyond source", w.Line)
			}
			idx := strings.Index(lines[w.Line-1], w.At)
			if at, ok := strings.CutPrefix(w.At, "@@"); ok {
				idx = strings.LastIndex(lines[w.Line-1], at)
			}
			if idx < 0 {
				t.Fatalf("bad test: %q not on line %d %q", w.At, w.Line, lines[w.Line-1])
			}
			if g.Col != idx+1 {
				t.Errorf("problem %d (%s): col %d; want %d (at %q)", i, g.Path, g.Col, idx+1, w.At)
			}
		}
	}
}
