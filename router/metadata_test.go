package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// pairsString renders pairs as k=v;k=v for compact comparisons.
func pairsString(ps []Pair) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(';')
		}
		b.Write(p.Key)
		b.WriteByte('=')
		b.Write(p.Value)
	}
	return b.String()
}

// objectOf builds {"k0":"v","k1":"v",...} with n entries.
func objectOf(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":"v"`, i)
	}
	b.WriteByte('}')
	return b.String()
}

// objectOfSize builds {"k":"xxx..."} of exactly n bytes (n >= 8).
func objectOfSize(n int) string {
	return `{"k":"` + strings.Repeat("x", n-8) + `"}`
}

func TestMetadataParseAccepts(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty header means no metadata", ``, ``},
		{"empty object", `{}`, ``},
		{"whitespace around and inside", " \t{ \"tier\" : \"gold\" ,\n\"x\":1 }\r\n ", `tier=gold;x=1`},
		{"string", `{"tier":"gold"}`, `tier=gold`},
		{"empty string value", `{"tier":""}`, `tier=`},
		{"empty key", `{"":"v"}`, `=v`},
		{"integer", `{"n":1}`, `n=1`},
		{"decimal kept as written", `{"n":1.0}`, `n=1.0`},
		{"exponent kept as written", `{"n":1e3}`, `n=1e3`},
		{"signed exponent kept", `{"n":-2.50E+07}`, `n=-2.50E+07`},
		{"negative zero kept", `{"n":-0}`, `n=-0`},
		{"true", `{"b":true}`, `b=true`},
		{"false", `{"b":false}`, `b=false`},
		{"string that looks like a number", `{"n":"1.0"}`, `n=1.0`},
		{"escapes unescaped", `{"q":"a\"b\\c\/d\n\t"}`, "q=a\"b\\c/d\n\t"},
		{"unicode escape", `{"e":"caf\u00e9"}`, "e=café"},
		{"surrogate pair escape", `{"e":"\ud83d\ude00"}`, "e=😀"},
		{"escaped key unescaped", `{"ti\u0065r":"gold"}`, `tier=gold`},
		{"raw UTF-8", `{"région":"île"}`, `région=île`},
		{"order kept", `{"b":"2","a":"1","c":3}`, `b=2;a=1;c=3`},
		{"keys differing only in case are distinct", `{"Tier":"a","tier":"b"}`, `Tier=a;tier=b`},
		{"mixed", `{"tier":"gold","n":1.50,"ok":false,"s":""}`, `tier=gold;n=1.50;ok=false;s=`},
		{"32 entries", objectOf(32), pairsOf(32)},
		{"4096 bytes", objectOfSize(4096), "k=" + strings.Repeat("x", 4088)},
	}
	var p MetadataParser
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if s := pairsString(got); s != tt.want {
				t.Fatalf("Parse(%q) = %q, want %q", tt.in, s, tt.want)
			}
		})
	}
}

// pairsOf is the pairsString of objectOf(n).
func pairsOf(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("k%d=v", i)
	}
	return strings.Join(parts, ";")
}

func TestMetadataParseRejects(t *testing.T) {
	tests := []struct {
		name, in string
		// want is the exact message, or a prefix when it ends in "…".
		want string
	}{
		{"too long", objectOfSize(4097), "X-Gateway-Metadata: 4097 bytes is too long; at most 4096 allowed"},
		{"too many entries", objectOf(33), "X-Gateway-Metadata: 33 entries is too many; at most 32 allowed"},
		{"array", `["gold"]`, "X-Gateway-Metadata: must be a JSON object, not an array"},
		{"string", `"gold"`, "X-Gateway-Metadata: must be a JSON object, not a string"},
		{"number", `1`, "X-Gateway-Metadata: must be a JSON object, not a number"},
		{"boolean", `true`, "X-Gateway-Metadata: must be a JSON object, not a boolean"},
		{"null", `null`, "X-Gateway-Metadata: must be a JSON object, not null"},
		{"null value", `{"tier":null}`, `X-Gateway-Metadata: value of "tier" must be a string, number or boolean, not null`},
		{"array value", `{"tier":["gold"]}`, `X-Gateway-Metadata: value of "tier" must be a string, number or boolean, not an array`},
		{"object value", `{"a":"1","tier":{"x":1}}`, `X-Gateway-Metadata: value of "tier" must be a string, number or boolean, not an object`},
		{"duplicate key", `{"tier":"gold","x":1,"tier":"silver"}`, `X-Gateway-Metadata: duplicate key "tier"`},
		{"duplicate key after unescaping", `{"tier":"gold","ti\u0065r":"gold"}`, `X-Gateway-Metadata: duplicate key "tier"`},
		{"trailing object", `{"a":"1"}{"b":"2"}`, `X-Gateway-Metadata: must be a single JSON object: unexpected tail: "{\"b\":\"2\"}"`},
		{"trailing garbage", `{"a":"1"} x`, `X-Gateway-Metadata: must be a single JSON object: unexpected tail: "x"`},
		{"trailing comma", `{"a":"1",}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"unterminated", `{"a":"1"`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"single quotes", `{'a':'1'}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"bare key", `{a:"1"}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"whitespace only", ` `, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"NaN", `{"n":NaN}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"Infinity", `{"n":-Inf}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"double dot number", `{"n":1..2}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"leading plus", `{"n":+1}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"leading zero", `{"n":01}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"bare dot", `{"n":.5}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"capitalised literal", `{"b":True}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"unknown escape", `{"a":"\x"}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"short unicode escape", `{"a":"\u12"}`, "X-Gateway-Metadata: must be a single JSON object: …"},
		{"raw control char", "{\"a\":\"x\ny\"}", "X-Gateway-Metadata: must be a single JSON object: …"},
		{"raw control char in key", "{\"a\tb\":\"x\"}", "X-Gateway-Metadata: must be a single JSON object: …"},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", "X-Gateway-Metadata: not valid UTF-8"},
		{"overlong UTF-8", "{\"a\":\"\xc0\xaf\"}", "X-Gateway-Metadata: not valid UTF-8"},
		{"lone high surrogate", `{"a":"\ud83d"}`, `X-Gateway-Metadata: a \u escape encodes a lone UTF-16 surrogate`},
		{"lone low surrogate", `{"a":"\ude00x"}`, `X-Gateway-Metadata: a \u escape encodes a lone UTF-16 surrogate`},
		{"high surrogate then non-low", `{"a":"\ud83d\u0041"}`, `X-Gateway-Metadata: a \u escape encodes a lone UTF-16 surrogate`},
		{"high surrogate then escaped backslash", `{"a":"\ud83d\\u0041"}`, `X-Gateway-Metadata: a \u escape encodes a lone UTF-16 surrogate`},
		{"lone surrogate in key", `{"\udc00":"x"}`, `X-Gateway-Metadata: a \u escape encodes a lone UTF-16 surrogate`},
	}
	var p MetadataParser
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want error %q", tt.in, pairsString(got), tt.want)
			}
			if got != nil {
				t.Errorf("Parse(%q) returned pairs with an error: %q", tt.in, pairsString(got))
			}
			msg := err.Error()
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(msg, prefix) || len(msg) == len(prefix) {
					t.Fatalf("Parse(%q) error %q, want %q followed by a reason", tt.in, msg, prefix)
				}
			} else if msg != tt.want {
				t.Fatalf("Parse(%q) error\n got %q\nwant %q", tt.in, msg, tt.want)
			}
		})
	}
}

// An escaped backslash before a "u" is not a \u escape; the surrogate check
// must not misread it.
func TestMetadataParseEscapedBackslashBeforeU(t *testing.T) {
	var p MetadataParser
	got, err := p.Parse([]byte(`{"a":"\\udc00","b":"\\\ud83d\ude00"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s, want := pairsString(got), `a=\udc00;b=\😀`; s != want {
		t.Fatalf("got %q, want %q", s, want)
	}
}

// The parser is reused: an error must not leave state that changes the next
// result, and results must be right whether the literal buffer shrinks or
// has to grow.
func TestMetadataParseReuse(t *testing.T) {
	var p MetadataParser
	if _, err := p.Parse([]byte(`{"tier":"gold","tier":"x"}`)); err == nil {
		t.Fatal("duplicate accepted")
	}
	// Every value of the 32-entry header is a number, so every value is
	// copied into the literal buffer, which must not move under earlier pairs.
	var big, bigWant strings.Builder
	big.WriteByte('{')
	for i := range 32 {
		if i > 0 {
			big.WriteByte(',')
			bigWant.WriteByte(';')
		}
		fmt.Fprintf(&big, `"k%d":%d.5e%d`, i, 1000+i, i)
		fmt.Fprintf(&bigWant, "k%d=%d.5e%d", i, 1000+i, i)
	}
	big.WriteByte('}')
	for _, tt := range []struct{ in, want string }{
		{`{"tier":"gold","n":2.0,"b":true}`, "tier=gold;n=2.0;b=true"},
		{`{"a":1}`, "a=1"},
		{big.String(), bigWant.String()},
		{`{"b":false}`, "b=false"},
	} {
		got, err := p.Parse([]byte(tt.in))
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		if s := pairsString(got); s != tt.want {
			t.Fatalf("Parse(%q) = %q, want %q", tt.in, s, tt.want)
		}
	}
}

// FuzzMetadataParse checks that Parse never panics, that what it accepts is
// what encoding/json reads (values as written), and that what encoding/json
// reads as a flat object of scalars within the limits is accepted.
func FuzzMetadataParse(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"tier":"gold"}`, `{"n":1.0,"m":1e3,"b":true,"c":false}`,
		`{"a":null}`, `{"a":[1]}`, `{"a":{}}`, `[]`, `{"a":"1"} {}`, `{"a":"1"}x`,
		`{"a":"\ud83d\ude00","b":"\u00e9\n"}`, `{"a":"\ud83d"}`, `{"a":1,"a":2}`,
		objectOf(33), "{\"a\":\"\xff\"}", `{"n":-0.0E-0}`, `{"n":NaN}`, `{"\\":"\\\\u"}`,
	} {
		f.Add([]byte(s))
	}
	var p MetadataParser
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := p.Parse(in)
		want, ok := referenceMetadata(in)
		if err != nil {
			if ok {
				t.Fatalf("Parse(%q) rejected a valid header: %v (want %q)", in, err, pairsString(want))
			}
			if !strings.HasPrefix(err.Error(), "X-Gateway-Metadata: ") {
				t.Fatalf("Parse(%q) error without the header prefix: %v", in, err)
			}
			return
		}
		if len(in) == 0 {
			if got != nil {
				t.Fatalf("Parse of empty = %q, want nil", pairsString(got))
			}
			return
		}
		if !ok {
			// The reference rejects lone surrogates only loosely (see
			// referenceMetadata); everything else it rejects, Parse must too.
			t.Fatalf("Parse(%q) accepted %q; the reference rejects it", in, pairsString(got))
		}
		if pairsString(got) != pairsString(want) || len(got) != len(want) {
			t.Fatalf("Parse(%q)\n got %q\nwant %q", in, pairsString(got), pairsString(want))
		}
	})
}

// referenceMetadata parses a header with encoding/json, independently of
// fastjson: ok is false when docs/routing.md, 2 rejects it. Headers with \u escapes
// in the surrogate range are reported as rejected when encoding/json would
// replace them (it turns a lone surrogate into U+FFFD instead of failing).
func referenceMetadata(in []byte) (pairs []Pair, ok bool) {
	if len(in) == 0 || len(in) > MaxMetadataBytes || !utf8.Valid(in) || !json.Valid(in) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key := tok.(string)
		if seen[key] {
			return nil, false
		}
		seen[key] = true
		tok, err = dec.Token()
		if err != nil {
			return nil, false
		}
		var val string
		switch v := tok.(type) {
		case string:
			val = v
		case json.Number:
			val = string(v)
		case bool:
			val = fmt.Sprint(v)
		default:
			return nil, false
		}
		if strings.ContainsRune(key, utf8.RuneError) || strings.ContainsRune(val, utf8.RuneError) {
			// Either a lone surrogate replaced by encoding/json (Parse
			// rejects it) or a real U+FFFD; tell them apart from the input.
			if hasLoneSurrogateEscape(in) {
				return nil, false
			}
		}
		pairs = append(pairs, Pair{Key: []byte(key), Value: []byte(val)})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	if len(pairs) > MaxMetadataEntries {
		return nil, false
	}
	return pairs, true
}

// hasLoneSurrogateEscape reports whether the input has a \u escape in the
// surrogate range not paired as high+low. It decodes escapes left to right
// like a JSON lexer, independently of checkSurrogates.
func hasLoneSurrogateEscape(in []byte) bool {
	s := string(in)
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != 'u' {
			i++
			continue
		}
		var r rune
		fmt.Sscanf(s[i+2:i+6], "%04x", &r)
		i += 5
		if r >= 0xDC00 && r <= 0xDFFF {
			return true
		}
		if r >= 0xD800 && r <= 0xDBFF {
			var lo rune
			if !strings.HasPrefix(s[i+1:], `\u`) {
				return true
			}
			fmt.Sscanf(s[i+3:i+7], "%04x", &lo)
			if lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}
