package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/valyala/fastjson"
)

// refUsage is the reference model of a usage object's four parts,
// written without the readers' code: encoding/json reads the object
// member by member, and the providers' conventions (docs/quotas.md,
// Cached tokens) are applied as the table says them. ok is false when
// the object is absent, null, or doubtful.
func refUsage(obj json.RawMessage) (Usage, bool) {
	obj = bytes.TrimSpace(obj)
	if len(obj) == 0 || obj[0] != '{' {
		return Usage{}, false
	}
	members, err := orderedMembers(obj)
	if err != nil {
		return Usage{}, false
	}
	count := func(raw json.RawMessage) (int64, bool) {
		if !refCountRE.Match(raw) {
			return 0, false
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		return n, err == nil
	}
	group := map[string]string{
		"prompt_tokens": "in", "input_tokens": "in", "inputTokens": "in",
		"completion_tokens": "out", "output_tokens": "out", "outputTokens": "out",
		"cache_read_input_tokens": "read", "cacheReadInputTokens": "read",
		"cache_creation_input_tokens": "write", "cacheWriteInputTokens": "write",
		"prompt_tokens_details": "details", "input_tokens_details": "details",
	}
	val := map[string]int64{}
	seen := map[string]bool{}
	inName := ""
	for _, m := range members {
		g := group[m.key]
		if g == "" || string(m.raw) == "null" {
			continue
		}
		if seen[g] {
			return Usage{}, false
		}
		seen[g] = true
		if g == "details" {
			if m.raw[0] != '{' {
				return Usage{}, false
			}
			inner, err := orderedMembers(m.raw)
			if err != nil {
				return Usage{}, false
			}
			for _, d := range inner {
				dg := map[string]string{"cached_tokens": "cached", "cache_write_tokens": "dwrite"}[d.key]
				if dg == "" || string(d.raw) == "null" {
					continue
				}
				if seen[dg] {
					return Usage{}, false
				}
				n, ok := count(d.raw)
				if !ok {
					return Usage{}, false
				}
				seen[dg], val[dg] = true, n
			}
			continue
		}
		n, ok := count(m.raw)
		if !ok {
			return Usage{}, false
		}
		val[g] = n
		if g == "in" {
			inName = m.key
		}
	}
	var u Usage
	if seen["out"] {
		u.Completion, u.HasCompletion = val["out"], true
	}
	if !seen["in"] {
		return u, u.HasCompletion
	}
	in, read, write, cached, dwrite := val["in"], val["read"], val["write"], val["cached"], val["dwrite"]
	inDetails := seen["cached"] || seen["dwrite"]
	pick := func(inner, outer string) (int64, bool) {
		if seen[inner] && seen[outer] && val[inner] != val[outer] {
			return 0, false
		}
		if seen[inner] {
			return val[inner], true
		}
		return val[outer], true
	}
	switch {
	case inName == "prompt_tokens":
		cr, ok1 := pick("cached", "read")
		cw, ok2 := pick("dwrite", "write")
		if !ok1 || !ok2 || cr+cw > in {
			return Usage{}, false
		}
		u.Prompt, u.CacheRead, u.CacheWrite = in, cr, cw
	case inName == "input_tokens" && inDetails:
		if seen["read"] || seen["write"] || cached+dwrite > in {
			return Usage{}, false
		}
		u.Prompt, u.CacheRead, u.CacheWrite = in, cached, dwrite
	case inName == "inputTokens" && inDetails:
		return Usage{}, false
	default:
		u.Prompt, u.CacheRead, u.CacheWrite = in+read+write, read, write
	}
	u.HasPrompt = true
	return u, true
}

// refCountRE is a count as the providers write one.
var refCountRE = regexp.MustCompile(`^(0|[1-9][0-9]{0,14})$`)

type rawMember struct {
	key string
	raw json.RawMessage
}

// orderedMembers returns an object's members in order, duplicates kept.
func orderedMembers(obj json.RawMessage) ([]rawMember, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var out []rawMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, rawMember{key: tok.(string), raw: raw})
	}
	return out, nil
}

// TestUsageReadersAgree: on random usage objects built from every
// provider's names, ReadUsage (bytes), fastjsonParts (a parsed value) and
// the reference model give the same answer, doubt included.
func TestUsageReadersAgree(t *testing.T) {
	names := []string{`"prompt_tokens"`, `"input_tokens"`, `"inputTokens"`, `"completion_tokens"`, `"output_tokens"`,
		`"outputTokens"`, `"cache_read_input_tokens"`, `"cacheReadInputTokens"`, `"cache_creation_input_tokens"`,
		`"cacheWriteInputTokens"`, `"total_tokens"`, `"iterations"`}
	details := []string{`"prompt_tokens_details"`, `"input_tokens_details"`}
	seed := uint64(7)
	next := func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	counts := []string{`0`, `1`, `7`, `20`, `100`, `null`}
	odd := []string{`1.5`, `-1`, `"3"`, `1e2`, `[1]`, `{"input_tokens":5}`, `01`}
	value := func() string {
		if next(12) == 0 {
			return odd[next(len(odd))]
		}
		return counts[next(len(counts))]
	}
	checked, known, reads, writes := 0, 0, 0, 0
	for range 50000 {
		var b bytes.Buffer
		b.WriteByte('{')
		for k := next(5); k >= 0; k-- {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			if next(6) == 0 {
				b.WriteString(details[next(2)])
				b.WriteString(`:{"text_tokens":1`)
				for c := next(4); c > 0; c-- {
					b.WriteString([]string{`,"cached_tokens":`, `,"cache_write_tokens":`}[next(2)])
					b.WriteString(value())
				}
				b.WriteByte('}')
				continue
			}
			b.WriteString(names[next(len(names))])
			b.WriteByte(':')
			b.WriteString(value())
		}
		b.WriteByte('}')
		obj := b.Bytes()
		if !json.Valid(obj) {
			continue // (01) only valid JSON is compared
		}
		want, wantOK := refUsage(obj)
		got, gotOK := ReadUsage([]byte(`{"id":"x","usage":` + string(obj) + `}`))
		if gotOK != wantOK || got != want {
			t.Fatalf("%s: ReadUsage %+v %v; reference %+v %v", obj, got, gotOK, want, wantOK)
		}
		v, err := fastjson.ParseBytes(obj)
		if err != nil {
			t.Fatalf("%s: %v", obj, err)
		}
		var fj Usage
		p, fjOK := fastjsonParts(v)
		if fjOK {
			fj, fjOK = p.resolve()
		}
		if fjOK != wantOK || fj != want {
			t.Fatalf("%s: fastjsonParts %+v %v; reference %+v %v", obj, fj, fjOK, want, wantOK)
		}
		checked++
		if wantOK && want.HasPrompt {
			known++
			if want.CacheRead > 0 {
				reads++
			}
			if want.CacheWrite > 0 {
				writes++
			}
		}
	}
	if known < checked/20 || reads < 100 || writes < 100 {
		t.Fatalf("only %d of %d objects had a known input (%d with cache reads, %d with writes): the generator is too noisy", known, checked, reads, writes)
	}
	t.Logf("%d objects, %d with a known input, %d with cache reads, %d with cache writes", checked, known, reads, writes)
}
