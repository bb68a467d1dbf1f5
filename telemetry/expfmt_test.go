package telemetry

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/upstream"
)

// sample is one parsed line of the Prometheus text exposition format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
	line   int
}

// key is the canonical form of a series: name{k="v",...} with labels sorted
// and values Go-quoted, so tests can name series without caring about the
// writer's label order or escaping.
func (s sample) key() string { return seriesKey(s.name, s.labels) }

func seriesKey(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	ks := make([]string, 0, len(labels))
	for k := range labels {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, k := range ks {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteByte('}')
	return b.String()
}

// key builds a canonical series key from alternating label names and values.
func key(name string, kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return seriesKey(name, m)
}

var metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// parseExposition parses text strictly as the Prometheus text format 0.0.4:
// valid metric and label names, label values with only the \\ \" \n
// escapes, a float value, no duplicate series, the lines of each family
// (histogram _bucket/_sum/_count together) contiguous, and every family
// preceded by exactly one "# HELP name text" (text not empty) and one
// "# TYPE name type" line (docs/operations.md, Metrics and logs), whose type fits its samples' names.
func parseExposition(t *testing.T, text []byte) []sample {
	t.Helper()
	out, err := parseExpositionErr(text)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var metricTypes = map[string]bool{"counter": true, "gauge": true, "histogram": true, "summary": true, "untyped": true}

func parseExpositionErr(text []byte) ([]sample, error) {
	if len(text) > 0 && text[len(text)-1] != '\n' {
		return nil, fmt.Errorf("exposition does not end with a newline")
	}
	var out []sample
	seen := map[string]int{}
	familyDone := map[string]bool{}
	help := map[string]bool{}
	typ := map[string]string{}
	sampled := map[string]bool{}
	prevFamily := ""
	for i, ln := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		lineNo := i + 1
		if ln == "" {
			continue
		}
		if strings.HasPrefix(ln, "#") {
			f := strings.SplitN(ln, " ", 4)
			if len(f) < 3 || f[0] != "#" || (f[1] != "HELP" && f[1] != "TYPE") {
				continue // a plain comment
			}
			name := f[2]
			if !metricNameRE.MatchString(name) {
				return nil, fmt.Errorf("line %d %q: bad metric name", lineNo, ln)
			}
			if sampled[name] {
				return nil, fmt.Errorf("line %d: %s metadata after its samples", lineNo, f[1])
			}
			switch f[1] {
			case "HELP":
				if help[name] {
					return nil, fmt.Errorf("line %d: second HELP for %s", lineNo, name)
				}
				if len(f) < 4 || strings.TrimSpace(f[3]) == "" {
					return nil, fmt.Errorf("line %d: HELP for %s has no text", lineNo, name)
				}
				help[name] = true
			case "TYPE":
				if typ[name] != "" {
					return nil, fmt.Errorf("line %d: second TYPE for %s", lineNo, name)
				}
				if len(f) != 4 || !metricTypes[f[3]] {
					return nil, fmt.Errorf("line %d %q: bad TYPE", lineNo, ln)
				}
				typ[name] = f[3]
			}
			continue
		}
		s, err := parseLine(ln)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %v", lineNo, ln, err)
		}
		s.line = lineNo
		k := s.key()
		if prev, dup := seen[k]; dup {
			return nil, fmt.Errorf("line %d: series %s already on line %d", lineNo, k, prev)
		}
		seen[k] = lineNo
		fam := familyOfTyped(s.name, typ)
		if typ[fam] == "" || !help[fam] {
			return nil, fmt.Errorf("line %d: %s has no TYPE and HELP before it", lineNo, s.name)
		}
		sampled[fam] = true
		if fam != prevFamily {
			if familyDone[fam] {
				return nil, fmt.Errorf("line %d: family %s is not contiguous", lineNo, fam)
			}
			familyDone[prevFamily] = true
			prevFamily = fam
		}
		out = append(out, s)
	}
	return out, nil
}

// familyOfTyped returns the family a sample name belongs to given the
// declared types: the name itself when typed as a counter, gauge or
// untyped (or a summary's quantile), else the histogram or summary whose
// _bucket/_sum/_count it is.
func familyOfTyped(name string, typ map[string]string) string {
	switch typ[name] {
	case "counter", "gauge", "untyped", "summary":
		return name
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suf)
		if !ok {
			continue
		}
		switch typ[base] {
		case "histogram":
			return base
		case "summary":
			if suf != "_bucket" {
				return base
			}
		}
	}
	return name
}

func parseLine(ln string) (sample, error) {
	s := sample{labels: map[string]string{}}
	end := strings.IndexAny(ln, "{ ")
	if end < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name = ln[:end]
	if !metricNameRE.MatchString(s.name) {
		return s, fmt.Errorf("bad metric name %q", s.name)
	}
	rest := ln[end:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq < 0 {
				return s, fmt.Errorf("label without '='")
			}
			name := rest[:eq]
			if !metricNameRE.MatchString(name) || strings.Contains(name, ":") {
				return s, fmt.Errorf("bad label name %q", name)
			}
			rest = rest[eq+1:]
			if !strings.HasPrefix(rest, `"`) {
				return s, fmt.Errorf("label %s value not quoted", name)
			}
			rest = rest[1:]
			var v strings.Builder
			closed := false
			for len(rest) > 0 && !closed {
				c := rest[0]
				rest = rest[1:]
				switch c {
				case '"':
					closed = true
				case '\\':
					if len(rest) == 0 {
						return s, fmt.Errorf("dangling backslash")
					}
					switch rest[0] {
					case '\\':
						v.WriteByte('\\')
					case '"':
						v.WriteByte('"')
					case 'n':
						v.WriteByte('\n')
					default:
						return s, fmt.Errorf("bad escape \\%c", rest[0])
					}
					rest = rest[1:]
				default:
					v.WriteByte(c)
				}
			}
			if !closed {
				return s, fmt.Errorf("unterminated label value")
			}
			if _, dup := s.labels[name]; dup {
				return s, fmt.Errorf("duplicate label %s", name)
			}
			s.labels[name] = v.String()
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
			} else if !strings.HasPrefix(rest, "}") {
				return s, fmt.Errorf("want ',' or '}' after label %s, got %q", name, rest)
			}
		}
	}
	if !strings.HasPrefix(rest, " ") {
		return s, fmt.Errorf("no space before value")
	}
	f := strings.Fields(rest)
	if len(f) < 1 || len(f) > 2 {
		return s, fmt.Errorf("want value [timestamp], got %q", rest)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil && f[0] != "+Inf" && f[0] != "-Inf" && f[0] != "NaN" {
		return s, fmt.Errorf("bad value %q", f[0])
	}
	s.value = v
	return s, nil
}

// switchyardSeries returns the switchyard_* series of text as key -> value.
func switchyardSeries(t *testing.T, text []byte) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, s := range parseExposition(t, text) {
		if strings.HasPrefix(s.name, "switchyard_") {
			out[s.key()] = s.value
		}
	}
	return out
}

func scrape(t *testing.T, m *Metrics) []byte {
	t.Helper()
	var b bytes.Buffer
	m.WritePrometheus(&b)
	return b.Bytes()
}

// diffSeries reports every difference between got and want.
func diffSeries(t *testing.T, got, want map[string]float64) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			t.Errorf("missing %s (want %v)", k, w)
		case !wok:
			t.Errorf("unexpected %s = %v", k, g)
		case math.Abs(g-w) > 1e-9:
			t.Errorf("%s = %v, want %v", k, g, w)
		}
	}
}

func TestParseLineRejectsMalformed(t *testing.T) {
	// The parser is what the other tests trust; make sure it can fail.
	for _, ln := range []string{
		`foo{a="b} 1`,
		`foo{a="b\x"} 1`,
		`foo{a=b} 1`,
		`foo{a="b"}1`,
		`foo bar`,
		`1foo 1`,
		`foo{a="b" c="d"} 1`,
	} {
		if _, err := parseLine(ln); err == nil {
			t.Errorf("parseLine(%q) accepted a malformed line", ln)
		}
	}
	s, err := parseLine(`foo{a="x\"y\\z\n", b="2"} 3.5`)
	if err != nil {
		t.Fatal(err)
	}
	if s.labels["a"] != "x\"y\\z\n" || s.labels["b"] != "2" || s.value != 3.5 {
		t.Fatalf("parsed %+v", s)
	}
}

func TestParseExpositionRequiresMetadata(t *testing.T) {
	ok := "# HELP a_total A.\n# TYPE a_total counter\na_total 1\n" +
		"# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"
	if _, err := parseExpositionErr([]byte(ok)); err != nil {
		t.Fatalf("refused a good exposition: %v", err)
	}
	for name, text := range map[string]string{
		"no metadata":     "a_total 1\n",
		"no TYPE":         "# HELP a_total A.\na_total 1\n",
		"no HELP":         "# TYPE a_total counter\na_total 1\n",
		"empty HELP":      "# HELP a_total\n# TYPE a_total counter\na_total 1\n",
		"bad TYPE":        "# HELP a_total A.\n# TYPE a_total countr\na_total 1\n",
		"TYPE after":      "# HELP a_total A.\na_total 1\n# TYPE a_total counter\n",
		"second TYPE":     "# HELP a A.\n# TYPE a gauge\n# TYPE a counter\na 1\n",
		"bucket of gauge": "# HELP h H.\n# TYPE h gauge\nh_bucket{le=\"1\"} 1\n",
	} {
		if _, err := parseExpositionErr([]byte(text)); err == nil {
			t.Errorf("%s: accepted %q", name, text)
		}
	}
}

// Every family of a full scrape (switchyard's, the process's and the Go
// runtime's) has its HELP and TYPE lines and the whole parses strictly.
func TestScrapeHasHelpAndTypeForEveryFamily(t *testing.T) {
	m := NewMetrics() // with the process and Go runtime series
	m.Loaded("0123456789abcdef", m.now())
	m.Reload(ReloadSuccess, "0123456789abcdef", m.now())
	m.Finished(&Entry{Status: 200, Target: "a", Key: "k", Usage: upstream.Usage{Prompt: 1, HasPrompt: true}})
	m.Attempt(nil, upstream.ClassOK, 200, 0)
	m.Panic()
	text := scrape(t, m)
	samples := parseExposition(t, text)
	fams := map[string]bool{}
	for _, ln := range strings.Split(string(text), "\n") {
		if f := strings.Fields(ln); len(f) >= 4 && f[1] == "TYPE" {
			fams[f[2]] = true
		}
	}
	for _, want := range []string{famRequests, famKeyRequests, famTokens, famPanics, famReloads, famReloadOK,
		famReloadTS, famInfo, "process_cpu_seconds_total", "go_goroutines", "go_gc_duration_seconds"} {
		if !fams[want] {
			t.Errorf("no TYPE line for %s", want)
		}
	}
	if len(samples) < 20 {
		t.Fatalf("only %d samples", len(samples))
	}
}
