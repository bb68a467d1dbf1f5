package hotpath

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/internal/jsonscan"
)

// The peek's JSON primitives: skipping values by their structure alone,
// reading the few strings routing needs exactly, and matching keys as a
// case-folding decoder would.

var (
	errKeyEscape    = errors.New("request body is not valid JSON: a key has an invalid escape")
	errUnterminated = errors.New("request body is not valid JSON: a string is not terminated")
	errUnclosed     = errors.New("request body is not valid JSON: it ends inside an array or object")
)

// syntaxError reports the byte at b[i] (or the body's end) where want
// belongs.
func syntaxError(b []byte, i int, want string) error {
	if i >= len(b) {
		return fmt.Errorf("request body is not valid JSON: it ends where %s belongs", want)
	}
	return fmt.Errorf("request body is not valid JSON: %q at offset %d, where %s belongs", b[i], i, want)
}

// skipValue returns the index just past the value that starts at b[i],
// nested base deep (its containers; 1 for a member of the body), checking
// only what docs/routing.md, 1 asks of values the gateway does not route on:
// strings terminated, brackets balanced, scalars well-formed.
func skipValue(b []byte, i, base int) (int, error) {
	switch b[i] {
	case '"':
		end := jsonscan.StringEnd(b, i)
		if end >= len(b) {
			return end, errUnterminated
		}
		return end + 1, nil
	case '{', '[':
		return skipNested(b, i, base)
	}
	end := scalarEnd(b, i)
	if !validScalar(b[i:end]) {
		return i, syntaxError(b, i, "a value")
	}
	return end, nil
}

// skipNested returns the index just past the array or object that opens at
// b[i], nested base deep. It counts brackets, checks that each closes what
// it should, and skips strings; nothing else of the grammar inside is
// checked. Like fastjson's parser, a value's depth is its containers plus
// one, and none may be deeper than maxBodyDepth: the first that is ends
// the skip with errTooDeep. No recursion, so no nesting overflows a stack.
func skipNested(b []byte, i, base int) (int, error) {
	// objects has bit d set when the container d levels below b[i]'s
	// (0 = b[i]'s own) is an object.
	var objects [maxBodyDepth/64 + 1]uint64
	depth := base
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case ' ', '\n', '\r', '\t', ',', ':':
			continue
		case '}', ']':
			d := depth - base - 1
			if (objects[d>>6]>>(d&63)&1 == 1) != (c == '}') {
				return i, fmt.Errorf("request body is not valid JSON: %q at offset %d does not close the bracket it should", c, i)
			}
			if depth--; depth == base {
				return i + 1, nil
			}
			continue
		default:
			// c starts (or continues) a value, or a key, inside the
			// container at depth: that value is at depth+1.
			if depth >= maxBodyDepth {
				return i, errTooDeep
			}
			switch c {
			case '"':
				if i = jsonscan.StringEnd(b, i); i >= len(b) {
					return i, errUnterminated
				}
			case '{', '[':
				d := depth - base
				if c == '{' {
					objects[d>>6] |= 1 << (d & 63)
				} else {
					objects[d>>6] &^= 1 << (d & 63)
				}
				depth++
			}
		}
	}
	return i, errUnclosed
}

// scalarEnd returns the index past the run of bytes a number or literal
// may hold that starts at b[i].
func scalarEnd(b []byte, i int) int {
	for ; i < len(b); i++ {
		c := b[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'E') {
			break
		}
	}
	return i
}

// validScalar reports whether s is a JSON number or true, false or null.
func validScalar(s []byte) bool {
	switch string(s) {
	case "true", "false", "null":
		return true
	}
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// appendString appends the text of the JSON string whose content (between
// the quotes) is s to dst, unescaped. ok is false when s is not valid JSON
// string content (a bad escape, a control character) or not valid UTF-8,
// a lone surrogate escape included.
func appendString(dst, s []byte) (_ []byte, ok bool) {
	if bytes.IndexByte(s, '\\') < 0 {
		// Fast path: nothing to unescape.
		for _, c := range s {
			if c < 0x20 {
				return dst, false
			}
		}
		if !utf8.Valid(s) {
			return dst, false
		}
		return append(dst, s...), true
	}
	// Slow path: byte by byte.
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c < 0x20:
			return dst, false
		case c == '\\':
			if i+1 >= len(s) {
				return dst, false
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				h := byteconv.Hex4(s[i+2:])
				if h < 0 {
					return dst, false
				}
				r := rune(h)
				if utf16.IsSurrogate(r) {
					// Only a high surrogate followed by an escaped low one.
					lo := rune(-1)
					if r < 0xDC00 && i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
						lo = rune(byteconv.Hex4(s[i+8:]))
					}
					if lo < 0xDC00 || lo > 0xDFFF {
						return dst, false
					}
					r = utf16.DecodeRune(r, lo)
					i += 6
				}
				dst = utf8.AppendRune(dst, r)
				i += 4
			default:
				return dst, false
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				return dst, false
			}
			dst = append(dst, s[i:i+n]...)
			i += n
		}
	}
	return dst, true
}

// validStringSyntax reports whether s is JSON string content by the
// grammar alone: no control characters, every escape well-formed.
func validStringSyntax(s []byte) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(s) {
				return false
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if byteconv.Hex4(s[i+2:]) < 0 {
					return false
				}
				i += 5
			default:
				return false
			}
		}
	}
	return true
}

// maxKeyBytes bounds the raw key (between its quotes) that can still spell
// a routing key: twenty characters (the longest, "previous_response_id"),
// each at most a six-byte \u escape. A longer key names none of them under
// any folding.
const maxKeyBytes = 20 * 6

// matchKey returns the routing key of keys that the raw key (between its
// quotes) names, and whether it names it exactly: false when only under
// case folding as encoding/json matches keys (bytes.EqualFold, so "MODEL",
// "ſtream" and "\u004dodel" all fold to one). Escapes are decoded first,
// so "\u006dodel" is "model". nil when it names none. A short key with an
// invalid escape is an error: it is not JSON.
func matchKey(raw []byte, keys []routingKey) (k *routingKey, exact bool, err error) {
	if len(raw) > maxKeyBytes || len(raw) == 0 {
		return nil, false, nil
	}
	// Fast path: the key as routed on, written plainly.
	for j := range keys {
		if string(raw) == keys[j].name {
			return &keys[j], true, nil
		}
	}
	name := raw
	ascii := true
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	var buf [maxKeyBytes]byte
	if !ascii && bytes.IndexByte(raw, '\\') >= 0 {
		var ok bool
		if name, ok = appendString(buf[:0], raw); !ok {
			if !validStringSyntax(raw) {
				return nil, false, errKeyEscape
			}
			// Valid JSON that is not UTF-8 text (a lone surrogate): a
			// decoder reads U+FFFD there, which folds to no routing key.
			return nil, false, nil
		}
	}
	if !ascii {
		for j := range keys { // written with escapes
			if string(name) == keys[j].name {
				return &keys[j], true, nil
			}
		}
	}
	for j := range keys {
		// An ASCII key folds to a routing key only at the same length.
		if (!ascii || len(name) == len(keys[j].name)) && bytes.EqualFold(name, []byte(keys[j].name)) {
			return &keys[j], false, nil
		}
	}
	return nil, false, nil
}
