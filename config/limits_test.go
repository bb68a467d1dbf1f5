package config

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

const deepMsg = "lists and mappings nested deeper than 64 levels; want at most 64 (the deepest value a config has, targets[i].retry.on_status_codes[j], is 5 levels down)"

// indented returns head, then n lines of item, each indented step columns
// more than the last.
func indented(head string, n, step int, item string) string {
	var b strings.Builder
	b.WriteString(head)
	for i := range n {
		b.WriteString(strings.Repeat(" ", i*step))
		b.WriteString(item)
	}
	return b.String()
}

// TestNestingLimit: a file nesting lists and mappings deeper than
// MaxNesting, in any YAML form, is refused with one problem at the first
// token past the limit, before the parser runs. Without the check the
// parser's memory grows with the square of the depth: by hand, 25,000
// "[" (50 KB) took 1 GB and 0.6 s, 50,000 3.7 GB; 25,000 "- " the same.
// The cases here are 100 levels deep so the suite stays fast either way.
func TestNestingLimit(t *testing.T) {
	r := strings.Repeat
	cases := []struct {
		name      string
		src       string
		line, col int
		path      string
	}{
		// "targets:" is level 1; the 64th "[" (column 10+63) is level 65.
		{"flow lists", "targets: " + r("[", 100) + r("]", 100) + "\n", 1, 73, "targets"},
		{"unclosed flow lists", "targets: " + r("[", 100) + "\n", 1, 73, "targets"},
		{"flow mappings", "targets: " + r("{a: ", 100) + "1" + r("}", 100) + "\n", 1, 10 + 63*4, "targets"},
		{"flow lists of one-pair mappings", "targets: " + r("[a: ", 100) + "1" + r("]", 100) + "\n", 1, 10 + 31*4 + 2, "targets"},
		// "[a: a: …": the list, then one level per ":" (the 63rd at 12+62*3).
		{"colons in one flow entry", "targets: [" + r("a: ", 100) + "b]\n", 1, 12 + 62*3, "targets"},
		{"anchored flow lists", "targets: " + r("&x [", 100) + r("]", 100) + "\n", 1, 13 + 63*4, "targets"},
		// A sequence may stand at its key's column: the first "-" is level 2.
		{"compact block lists", "targets:\n" + r("- ", 100) + "x\n", 2, 1 + 63*2, "targets"},
		// Line k+2 opens level k+2 at column k+1.
		{"block lists by indentation", indented("targets:\n", 100, 1, "-\n"), 65, 64, "targets"},
		// Line k+2 opens level k+2 at column k+2, reported at the key.
		{"block mappings by indentation", indented("targets:\n", 100, 1, " a:\n"), 65, 65, "targets"},
		// Line k+2 opens levels 2k+2 ("-", column 2k+1) and 2k+3 ("a").
		{"block lists of mappings", indented("targets:\n", 100, 2, "- a:\n"), 33, 65, "targets"},
		{"explicit keys", r("? ", 100) + "x\n", 1, 1 + 64*2, ""},
		{"under an unknown top-level key", "other: " + r("[", 100) + "\n", 1, 8 + 63, ""},
		{"in a second document", "targets: []\n---\ntargets: " + r("[", 100) + "\n", 3, 73, "targets"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(t, tc.src, noEnv)
			want := Problem{File: "test.yaml", Line: tc.line, Col: tc.col, Path: tc.path, Message: deepMsg}
			if len(got) != 1 || got[0] != want {
				t.Errorf("got %v\nwant %v", (&Error{Problems: got}).Error(), want)
			}
		})
	}
}

// TestNestingAtTheLimitIsNotRefused: 64 levels pass the check (and then
// fail validation as any list in place of a target would).
func TestNestingAtTheLimitIsNotRefused(t *testing.T) {
	r := strings.Repeat
	for _, src := range []string{
		"targets: " + r("[", 63) + r("]", 63) + "\n",
		"targets:\n" + r("- ", 63) + "x\n",
		indented("targets:\n", 63, 1, " a:\n"),
		indented("targets:\n", 31, 2, "- a:\n"),
	} {
		for _, p := range problemsOf(t, src, noEnv) {
			if p.Message == deepMsg {
				t.Errorf("64 levels refused: %v\n%s", p, src)
			}
		}
	}
}

// TestNestingIgnoresStringsAndComments: brackets, quotes and dashes inside
// quoted strings, comments and block strings are text, not nesting.
func TestNestingIgnoresStringsAndComments(t *testing.T) {
	r := strings.Repeat
	single := "'" + r("[{", 100) + "''" + r("[", 100) + "# x'"
	double := `"` + r("[{", 100) + `\"` + r("[", 100) + `\\"`
	src := "# " + r("[", 100) + "\n" +
		"strategy: # " + r("{", 100) + "\n" +
		"  mode: conditional\n" +
		"  conditions:\n" +
		"    - {key: model, value: " + single + ", target_key: a} # " + r("[", 100) + "\n" +
		"    - {key: user, value: " + double + ", target_key: a}\n" +
		"    - key: metadata\n" +
		"      field: |\n" +
		"        " + r("[", 100) + "\n" +
		"        " + r("- ", 100) + "\n" +
		"        '\n" +
		"      value: x'\n" +
		"      target_key: a\n" +
		"targets:\n" +
		"  - virtual_key: a\n" +
		"    provider: openai\n" +
		"    base_url: http://127.0.0.1:1/v1\n" +
		"    api_key: k\n"
	cfg := mustParse(t, src, noEnv)
	c := cfg.Strategy.Conditions
	if want := r("[{", 100) + "'" + r("[", 100) + "# x"; c[0].Value != want {
		t.Errorf("single-quoted value %q; want %q", c[0].Value, want)
	}
	if want := r("[{", 100) + `"` + r("[", 100) + `\`; c[1].Value != want {
		t.Errorf("double-quoted value %q; want %q", c[1].Value, want)
	}
	if want := r("[", 100) + "\n" + r("- ", 100) + "\n'\n"; c[2].Field != want || c[2].Value != "x'" {
		t.Errorf("block string field %q, value %q", c[2].Field, c[2].Value)
	}
}

// TestLegitimateDepthLoads: the deepest values the schema has, written in
// block style, flow style and through merge keys, load (the example file
// and 10,000 rules are TestExampleConfigLoads and TestParseReturnsMemory).
func TestLegitimateDepthLoads(t *testing.T) {
	for _, src := range []string{
		"strategy: {mode: conditional, conditions: [{key: model, value: m, target_keys: [a]}]}\n" +
			"targets: [{virtual_key: a, provider: openai, retry: {on_status_codes: [500, 502]}, model_map: {x: y}}]\n",
		"strategy:\n  mode: conditional\n  conditions:\n  - key: model\n    value: m\n    target_keys:\n    - a\n" +
			"targets:\n- virtual_key: a\n  provider: openai\n  <<: [{retry: {on_status_codes: [500, 502]}}]\n",
	} {
		cfg := mustParse(t, src, noEnv)
		if got := cfg.Targets[0].Retry.OnStatusCodes; len(got) != 2 || got[1] != 502 {
			t.Errorf("on_status_codes %v\n%s", got, src)
		}
	}
}

// TestFileSizeLimit: MaxFileBytes is accepted; one byte more is one
// problem, from Parse and from Load, whatever the file holds.
func TestFileSizeLimit(t *testing.T) {
	atLimit := minimal + "#" + strings.Repeat("x", MaxFileBytes-len(minimal)-2) + "\n"
	if len(atLimit) != MaxFileBytes {
		t.Fatalf("bad test: %d bytes", len(atLimit))
	}
	mustParse(t, atLimit, noEnv)

	want := Problem{File: "test.yaml", Line: 1, Col: 1,
		Message: "the file is larger than 4 MiB (4194304 bytes); want a smaller config (10,000 rules take about 680 KB)"}
	got := problemsOf(t, atLimit+"\n", noEnv)
	if len(got) != 1 || got[0] != want {
		t.Errorf("Parse: got %v\nwant %v", (&Error{Problems: got}).Error(), want)
	}

	// Load reads no more than MaxFileBytes+1 of a file far over the limit
	// (here a sparse 1 GiB one) and reports the same problem.
	path := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Load(path)
	var ce *Error
	want.File = path
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0] != want {
		t.Errorf("Load: %v; want %v", err, want)
	}
}

// slowError is a yaml.Error whose Error (go-yaml's source excerpt, which
// takes seconds for one long line) must not be called.
type slowError struct{ t *testing.T }

func (e slowError) Error() string {
	e.t.Error("syntaxProblem called Error() on a yaml.Error")
	return "excerpt"
}
func (e slowError) GetToken() *token.Token {
	return &token.Token{Position: &token.Position{Line: 3, Column: 7}}
}
func (slowError) GetMessage() string            { return "sequence end token ']' not found" }
func (slowError) FormatError(bool, bool) string { return "excerpt" }

func TestSyntaxProblemUsesTheMessageOnly(t *testing.T) {
	var ye yaml.Error = slowError{t}
	got := syntaxProblem("f.yaml", ye)
	want := Problem{File: "f.yaml", Line: 3, Col: 7, Message: "YAML syntax error: sequence end token ']' not found"}
	if got != want {
		t.Errorf("got %v; want %v", got, want)
	}
}

// TestNestingMatchesParserDepth: on random documents mixing every form of
// nesting (flow lists and mappings, one-pair mappings in lists, anchors,
// tags, compact and indented block lists and mappings, a list at its key's
// column) with quoted strings, comments and block strings full of
// brackets, the check refuses exactly the documents go-yaml parses deeper
// than MaxNesting (its path depth: one level per mapping value or list
// item on the way down).
func TestNestingMatchesParserDepth(t *testing.T) {
	g := nestGen{rand.New(rand.NewPCG(1, 2))}
	refused := 0
	for range 300 {
		src := g.block(1+g.r.IntN(120), 0) + "\n"
		f, err := parser.ParseBytes([]byte(src), 0)
		if err != nil {
			t.Fatalf("bad test: generated YAML does not parse: %v\n%s", err, src)
		}
		depth := 0
		for _, doc := range f.Docs {
			depth = max(depth, pathDepth(doc))
		}
		at, _, deep := tooDeep(lexer.Tokenize(src))
		if deep != (depth > MaxNesting) {
			t.Fatalf("parser depth %d, refused %v (at %v)\n%s", depth, deep, at, src)
		}
		if deep {
			refused++
		}
	}
	if refused < 50 || refused > 250 {
		t.Errorf("bad test: %d of 300 documents too deep; want a mix", refused)
	}
}

// pathDepth is the length of the longest YAML path in n.
func pathDepth(n ast.Node) int {
	d := 0
	switch x := n.(type) {
	case *ast.DocumentNode:
		if x.Body != nil {
			d = pathDepth(x.Body)
		}
	case *ast.MappingNode:
		for _, v := range x.Values {
			d = max(d, pathDepth(v))
		}
	case *ast.MappingValueNode:
		d = 1 + max(pathDepth(x.Key), pathDepth(x.Value))
	case *ast.MappingKeyNode:
		d = pathDepth(x.Value)
	case *ast.SequenceNode:
		for _, v := range x.Values {
			d = max(d, pathDepth(v))
		}
		d++
	case *ast.AnchorNode:
		d = pathDepth(x.Value)
	case *ast.TagNode:
		d = pathDepth(x.Value)
	}
	return d
}

// nestGen writes random valid YAML of a given nesting depth.
type nestGen struct{ r *rand.Rand }

func (g nestGen) leaf(col int) string {
	ind := "\n" + strings.Repeat(" ", col+2)
	switch g.r.IntN(5) {
	case 0:
		return "'[[{{''[['"
	case 1:
		return `"[\"{{[[\\"`
	case 2:
		return "x # [[[[{{{{"
	case 3:
		return "|" + ind + "[[[[ '\" {{{" + ind + "# - - [[[["
	}
	return "x"
}

func (g nestGen) flow(d int) string {
	if d <= 0 {
		return [...]string{"'[[{'", `"]]}\"["`, "x"}[g.r.IntN(3)]
	}
	switch g.r.IntN(6) {
	case 0:
		return "[" + g.flow(d-1) + "]"
	case 1:
		return "{k: " + g.flow(d-1) + "}"
	case 2:
		return "[a, " + g.flow(d-1) + ", b]"
	case 3:
		return "[k: " + g.flow(d-2) + "]"
	case 4:
		return "&a [" + g.flow(d-1) + "]"
	}
	return "!!seq [\n  " + g.flow(d-1) + "\n  ]"
}

func (g nestGen) block(d, col int) string {
	if d <= 0 {
		return g.leaf(col)
	}
	sp := func(c int) string { return strings.Repeat(" ", c) }
	switch g.r.IntN(7) {
	case 0:
		return "- " + g.block(d-1, col+2)
	case 1:
		return "k:\n" + sp(col+2) + g.block(d-1, col+2)
	case 2:
		if d >= 2 {
			return "k:\n" + sp(col) + "- " + g.block(d-2, col+2)
		}
	case 3:
		return "k: " + g.flow(d-1)
	case 4:
		return "a: 1 # [[[\n" + sp(col) + "k: # {{{\n" + sp(col+1) + g.block(d-1, col+1)
	case 5:
		if d >= 2 {
			return "- a: '[[['\n" + sp(col+2) + "k:\n" + sp(col+4) + g.block(d-2, col+4)
		}
	}
	return "- " + g.flow(d-1)
}

// ReadFile stops one byte past the limit, so Parse refuses a huge file
// without it being read whole.
func TestReadFileStopsPastTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	data, err := ReadFile(path)
	if err != nil || len(data) != MaxFileBytes+1 {
		t.Fatalf("read %d bytes, %v; want MaxFileBytes+1", len(data), err)
	}
	if _, err := Parse(path, data, noEnv); err == nil {
		t.Fatal("a file over the limit parsed")
	}
}
