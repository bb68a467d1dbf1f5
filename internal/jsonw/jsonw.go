// Package jsonw appends JSON text to byte slices without reflection or
// allocation: the writers the provider adapters and translators share.
package jsonw

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// plain marks the ASCII bytes String copies as they are: all but control
// bytes and " \ < > &.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// String appends s as a JSON string literal (quotes included). Invalid
// UTF-8 is replaced by U+FFFD so the output is always valid JSON; <, > and &
// are escaped so an answer is safe to embed in HTML. Runs of bytes that
// need no escape are copied at once.
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	run := 0 // start of the bytes not yet copied
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			dst = append(dst, s[run:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other control bytes, < > &
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			run = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[run:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[run:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size // a valid rune: part of the run
			continue
		}
		i += size
		run = i
	}
	dst = append(dst, s[run:]...)
	return append(dst, '"')
}
