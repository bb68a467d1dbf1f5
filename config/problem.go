package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Problem is one thing wrong with a configuration file, located by file,
// line, column and YAML path.
type Problem struct {
	// File is the path passed to Load or Parse ("" when parsed from memory).
	File string
	// Line and Col are 1-based; 0 when the problem has no position in the
	// file (never the case for problems this package reports today).
	Line, Col int
	// Path is the YAML path of the offending value, like
	// "strategy.conditions[2].key" or `targets[0].model_map["gpt-4o"]`.
	// "" for a YAML syntax error.
	Path string
	// Message says what is wrong and what is accepted.
	Message string
}

// String formats the problem as "FILE:LINE:COL: PATH: MESSAGE", the line
// format of `switchyard validate`. Empty parts are left out rather than
// printed as blanks ("config.yaml:3:5: MESSAGE" for a syntax error).
func (p Problem) String() string {
	var b strings.Builder
	file := p.File
	if file == "" {
		file = "<config>"
	}
	b.WriteString(file)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error is the error Parse and Load return for a configuration that is not
// valid. It holds every problem found, sorted by line then column.
type Error struct {
	// Problems is non-empty.
	Problems []Problem
}

// Error returns the problems one a line, in file order.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// sortProblems orders problems by position (stable, so problems at one
// position keep the order they were found in) and drops exact repeats, which
// a merge key (<<: *defaults) shared by several mappings can produce.
func sortProblems(ps []Problem) []Problem {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if c := cmp.Compare(a.Line, b.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Col, b.Col)
	})
	seen := make(map[Problem]bool, len(ps))
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
