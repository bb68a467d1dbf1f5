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
// escapes, a float value, no duplicate series, and the lines of each
// family (histogram _bucket/_sum/_count together) contiguous.
func parseExposition(t *testing.T, text []byte) []sample {
	t.Helper()
	if len(text) > 0 && text[len(text)-1] != '\n' {
		t.Fatalf("exposition does not end with a newline")
	}
	var out []sample
	seen := map[string]int{}
	familyDone := map[string]bool{}
	prevFamily := ""
	for i, ln := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		lineNo := i + 1
		if ln == "" || strings.HasPrefix(ln, "#") {
			continue
		}
		s, err := parseLine(ln)
		if err != nil {
			t.Fatalf("line %d %q: %v", lineNo, ln, err)
		}
		s.line = lineNo
		k := s.key()
		if prev, dup := seen[k]; dup {
			t.Fatalf("line %d: series %s already on line %d", lineNo, k, prev)
		}
		seen[k] = lineNo
		fam := familyOf(s.name)
		if fam != prevFamily {
			if familyDone[fam] {
				t.Fatalf("line %d: family %s is not contiguous", lineNo, fam)
			}
			familyDone[prevFamily] = true
			prevFamily = fam
		}
		out = append(out, s)
	}
	return out
}

func familyOf(name string) string {
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if strings.HasSuffix(name, suf) {
			return strings.TrimSuffix(name, suf)
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
