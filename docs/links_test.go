package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, seen from this package's directory.
const root = ".."

// linkedPages are the Markdown files whose links are checked.
func linkedPages(t *testing.T) []string {
	t.Helper()
	var pages []string
	for _, pat := range []string{"README.md", "docs/*.md", "bench/*.md", "telemetry/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, m...)
	}
	if len(pages) < 10 {
		t.Fatalf("found only %d pages: %v", len(pages), pages)
	}
	return pages
}

// inlineLink is a Markdown inline link or image: [text](target) or
// [text](target "title"). Reference-style links are not used in these pages.
var inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// codeSpan is an inline code span; links inside one are text, not links.
var codeSpan = regexp.MustCompile("`+[^`]*`+")

// prose returns the lines of a Markdown file outside fenced code blocks,
// with inline code spans blanked out, and each line's 1-based number.
func prose(text string) (lines []string, numbers []int) {
	fence := ""
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(l, " ")
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		lines = append(lines, codeSpan.ReplaceAllString(l, "``"))
		numbers = append(numbers, i+1)
	}
	return lines, numbers
}

var heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// slug is GitHub's anchor for a heading's text: the rendered text lowercased,
// every character that is not a letter, digit, space, hyphen or underscore
// dropped, spaces turned into hyphens.
func slug(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1") // a link's text only
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the anchors GitHub gives the headings of a Markdown text:
// a repeated slug gets -1, -2, … in order.
func anchors(text string) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(l, " ")
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			set[s+"-"+itoa(n)] = true
		} else {
			set[s] = true
		}
		seen[s]++
	}
	return set
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// brokenLinks returns one message per link of page (a path under root) whose
// file does not exist or whose #anchor is not a heading of its target.
func brokenLinks(page string, read func(string) (string, error), exists func(string) bool) []string {
	text, err := read(page)
	if err != nil {
		return []string{err.Error()}
	}
	var broken []string
	lines, numbers := prose(text)
	for i, l := range lines {
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
				rel, err := filepath.Rel(root, file)
				if err != nil || strings.HasPrefix(rel, "..") {
					broken = append(broken, loc(page, numbers[i])+": "+target+" leaves the repository")
					continue
				}
				if !exists(file) {
					broken = append(broken, loc(page, numbers[i])+": "+target+": no such file")
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(file, ".md") {
				broken = append(broken, loc(page, numbers[i])+": "+target+": an anchor into a file that is not Markdown")
				continue
			}
			body, err := read(file)
			if err != nil {
				broken = append(broken, loc(page, numbers[i])+": "+err.Error())
				continue
			}
			if !anchors(body)[anchor] {
				broken = append(broken, loc(page, numbers[i])+": "+target+": no heading with anchor #"+anchor)
			}
		}
	}
	return broken
}

func loc(page string, line int) string {
	rel, _ := filepath.Rel(root, page)
	return filepath.ToSlash(rel) + ":" + itoa(line)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

// TestLinksResolve: every relative link in the documentation names a file
// that exists, and every #anchor a heading of its target page.
func TestLinksResolve(t *testing.T) {
	links := 0
	for _, p := range linkedPages(t) {
		text, _ := readFile(p)
		lines, _ := prose(text)
		for _, l := range lines {
			links += len(inlineLink.FindAllString(l, -1))
		}
		for _, msg := range brokenLinks(p, readFile, fileExists) {
			t.Error(msg)
		}
	}
	if links < 100 {
		t.Fatalf("only %d links found: the link pattern no longer matches the pages", links)
	}
}

// TestBrokenLinksAreFound: the checker itself reports a missing file, a
// missing anchor in another page and in its own, and accepts the slugs GitHub
// gives headings with code, apostrophes and repeats.
func TestBrokenLinksAreFound(t *testing.T) {
	pages := map[string]string{
		filepath.Join(root, "docs", "Fake.md"): "# A\n\n## What `validate` proves\n\n## Operator's console, tracing and dashboard\n\n## Choices\n\n## Choices\n\n" +
			"[ok](#what-validate-proves) [ok](#operators-console-tracing-and-dashboard) [ok](#choices-1) [ok](Other.md#b-title) [ok](../README.md)\n" +
			"`[not a link](#nowhere)`\n```\n[not a link](#nowhere)\n```\n" +
			"[bad](#nowhere) [bad](Other.md#nowhere) [bad](missing.md) [bad](#choices-2)\n",
		filepath.Join(root, "docs", "Other.md"): "# B title\n",
	}
	read := func(p string) (string, error) {
		if s, ok := pages[p]; ok {
			return s, nil
		}
		return readFile(p)
	}
	exists := func(p string) bool {
		_, ok := pages[p]
		return ok || fileExists(p)
	}
	got := brokenLinks(filepath.Join(root, "docs", "Fake.md"), read, exists)
	want := []string{
		"docs/Fake.md:16: #nowhere: no heading with anchor #nowhere",
		"docs/Fake.md:16: Other.md#nowhere: no heading with anchor #nowhere",
		"docs/Fake.md:16: missing.md: no such file",
		"docs/Fake.md:16: #choices-2: no heading with anchor #choices-2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// citedPage is a documentation page named in a code comment, a config or a
// script: "(docs/quotas.md, Token buckets)".
var citedPage = regexp.MustCompile(`\bdocs/[a-z0-9-]+\.md\b`)

// oldCitation is a citation of a README section, from before the reference
// moved to docs/: "(README, Routing 5)", "README#quotas", `README "Errors"`.
var oldCitation = regexp.MustCompile(`\bREADME(, [A-Z]|#[a-z]| ")`)

// TestCitedPagesExist: every docs/*.md page that code, configs, manifests and
// scripts cite exists, and none cites a README section (those moved to docs/).
func TestCitedPagesExist(t *testing.T) {
	cited := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".yaml", ".yml", ".sh", ".json", ".md":
		default:
			if d.Name() != "Makefile" && d.Name() != "Dockerfile" {
				return nil
			}
		}
		text, err := readFile(p)
		if err != nil {
			return err
		}
		for i, l := range strings.Split(text, "\n") {
			for _, c := range citedPage.FindAllString(l, -1) {
				cited++
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(c))); err != nil {
					t.Errorf("%s: cites %s, which does not exist", loc(p, i+1), c)
				}
			}
			// Markdown may name a README (bench/README.md); this file names the pattern.
			if filepath.Ext(p) != ".md" && filepath.Base(p) != "links_test.go" && oldCitation.MatchString(l) {
				t.Errorf("%s: cites a README section; the reference is in docs/: %s", loc(p, i+1), strings.TrimSpace(l))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited < 50 {
		t.Fatalf("only %d citations of docs pages found", cited)
	}
}
