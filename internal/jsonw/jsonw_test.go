package jsonw

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// refString is String as it was before runs were copied at once: the
// reference the faster one must match byte for byte.
func refString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

var stringSeeds = []string{"", "plain ascii", "quote \" back \\ nl \n cr \r tab \t", "\x00\x01\x1f\x7f", "<b>&amp;</b>",
	"héllo ✓ 😀", "\u2028\u2029", "bad \xff\xfe utf8 \xc3", "\xe2\x80", strings.Repeat("long run ", 100) + "\"end"}

func TestStringMatchesReference(t *testing.T) {
	for _, s := range stringSeeds {
		got, want := String([]byte("x"), s), refString([]byte("x"), s)
		if string(got) != string(want) {
			t.Errorf("%q:\n got  %s\n want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got[1:], &back); err != nil || (utf8.ValidString(s) && back != s) {
			t.Errorf("%q does not round-trip: %q %v", s, back, err)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := String(nil, s), refString(nil, s); string(got) != string(want) {
			t.Fatalf("%q:\n got  %s\n want %s", s, got, want)
		}
	})
}
