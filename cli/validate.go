package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
)

// validate implements `switchyard validate [-config FILE] [-strict]`.
//
// Output, all on stdout: every load problem as FILE:LINE:COL: PATH: MESSAGE
// (exit 1); otherwise every lint finding as "warning: " and the same shape,
// then a summary line. -strict makes warnings fail the run (exit 1).
func validate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("validate", stderr)
	cfgPath := configFlag(fs)
	strict := fs.Bool("strict", false, "treat lint warnings as errors (exit 1)")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	cfg, ok := load(*cfgPath, stdout)
	if !ok {
		return ExitFail
	}
	warnings := lint(cfg)
	for _, w := range warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	counts := fmt.Sprintf("%s, %s", plural(len(cfg.Strategy.Conditions), "rule"), plural(len(cfg.Targets), "target"))
	if n := len(cfg.Auth.Keys); n > 0 {
		counts += ", " + plural(n, "client key")
	}
	switch {
	case len(warnings) == 0:
		fmt.Fprintf(stdout, "%s: ok (%s)\n", *cfgPath, counts)
	case *strict:
		fmt.Fprintf(stdout, "%s: invalid with -strict (%s)\n", *cfgPath, plural(len(warnings), "warning"))
		return ExitFail
	default:
		fmt.Fprintf(stdout, "%s: ok (%s; %s)\n", *cfgPath, counts, plural(len(warnings), "warning"))
	}
	return ExitOK
}

// load loads the config at path. On failure it prints every problem, one a
// line, or a one-line read error, to w and returns false.
func load(path string, w io.Writer) (*config.Config, bool) {
	return loadWith(config.Load, path, w)
}

// loadWith is load with the loader fn (explain uses config.LoadUnproven).
func loadWith(fn func(string) (*config.Config, error), path string, w io.Writer) (*config.Config, bool) {
	cfg, err := fn(path)
	if err == nil {
		return cfg, true
	}
	var ce *config.Error
	var pe *fs.PathError
	switch {
	case errors.As(err, &ce):
		for _, p := range ce.Problems {
			fmt.Fprintln(w, p.String())
		}
	case errors.As(err, &pe):
		fmt.Fprintf(w, "%s: cannot read config: %v\n", path, pe.Err)
	default:
		fmt.Fprintf(w, "%s: %v\n", path, err)
	}
	return nil, false
}

// lint returns the router's lint findings for cfg as located lines in the
// validate format, without the "warning: " prefix.
func lint(cfg *config.Config) []string {
	rules, targets := cfg.RouterSpecs()
	findings := router.Lint(rules, targets)
	keyFindings := router.LintKeys(rules, targets, cfg.KeySpecs())
	residency := append(append(cfg.ResidencyWarnings(), cfg.BatchWarnings()...), cfg.PriceWarnings()...)
	if len(findings) == 0 && len(keyFindings) == 0 && len(residency) == 0 {
		return nil
	}
	src := readLines(cfg.File)
	out := make([]string, 0, len(findings)+len(keyFindings))
	for _, f := range findings {
		p := config.Problem{File: cfg.File, Message: f.Message}
		switch {
		case f.Rule >= 0 && f.Rule < len(cfg.Strategy.Conditions):
			p.Path = fmt.Sprintf("strategy.conditions[%d]", f.Rule)
			p.Line = cfg.Strategy.Conditions[f.Rule].Line
		case f.Target >= 0 && f.Target < len(cfg.Targets):
			p.Path = fmt.Sprintf("targets[%d]", f.Target)
			p.Line = cfg.Targets[f.Target].Line
		}
		p.Col = column(src, p.Line)
		out = append(out, p.String())
	}
	for _, p := range residency {
		if p.Col == 0 {
			p.Col = column(src, p.Line)
		}
		out = append(out, p.String())
	}
	return append(out, lintKeys(cfg, keyFindings, src)...)
}

// lintKeys locates the client key findings like lint's.
func lintKeys(cfg *config.Config, findings []router.KeyFinding, src []string) []string {
	var out []string
	for _, f := range findings {
		p := config.Problem{File: cfg.File, Message: f.Message}
		switch {
		case f.Rule >= 0 && f.Rule < len(cfg.Strategy.Conditions):
			p.Path = fmt.Sprintf("strategy.conditions[%d]", f.Rule)
			p.Line = cfg.Strategy.Conditions[f.Rule].Line
		case f.Key >= 0 && f.Key < len(cfg.Auth.Keys):
			p.Path = fmt.Sprintf("auth.keys[%d]", f.Key)
			p.Line = cfg.Auth.Keys[f.Key].Line
		}
		p.Col = column(src, p.Line)
		out = append(out, p.String())
	}
	return out
}

// readLines returns the file's lines, or nil if it cannot be read (the
// positions then fall back to column 1).
func readLines(path string) []string {
	data, err := config.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Split(string(data), "\n")
}

// column returns the 1-based column where the YAML node on line starts: the
// first character after the indentation and any "- " list markers. The
// config records only the line of a condition or target; for the block style
// every config uses, the node starts there. 0 when line is 0.
func column(lines []string, line int) int {
	if line <= 0 {
		return 0
	}
	if line > len(lines) {
		return 1
	}
	s := lines[line-1]
	i := 0
	for i < len(s) {
		switch {
		case s[i] == ' ' || s[i] == '\t':
			i++
		case s[i] == '-' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t'):
			i++
		default:
			return i + 1
		}
	}
	return 1
}

// plural renders "1 rule", "2 rules".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
