// Package jsonscan holds the JSON scanning primitives the hot path's peek
// and the Responses socket's message scanner share: finding the end of a
// string and skipping whitespace, without decoding or allocating.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// StringEnd returns the index of the quote closing the string that opens at
// b[i], or len(b) when there is none. Past its first bytes the search for a
// quote is bytes.IndexByte's (vectorized); a quote after an odd run of
// backslashes is escaped and does not end the string.
func StringEnd(b []byte, i int) int {
	i++
	// Fast path: most strings of a request (keys, roles, ids) end within a
	// few bytes, where reading eight bytes at a time (SWAR) beats setting
	// up a vectorized search.
	for n := min(len(b)-8, i+ShortString); i <= n; {
		x := binary.LittleEndian.Uint64(b[i:])
		m := ZeroBytes(x^quotes) | ZeroBytes(x^backslashes)
		if m == 0 {
			i += 8
			continue
		}
		i += bits.TrailingZeros64(m) >> 3
		if b[i] == '"' {
			return i
		}
		i += 2 // a backslash: the escaped byte cannot end the string
	}
	// Slow path: a long string. Escapes before i are consumed, so a run of
	// backslashes before a quote is counted back to i at most.
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			break
		}
		q := i + j
		n := 0 // backslashes right before the quote: odd = escaped
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
	return len(b)
}

// Eight copies of a quote and of a backslash, for ZeroBytes.
const (
	quotes      = 0x2222222222222222
	backslashes = 0x5c5c5c5c5c5c5c5c
)

// ZeroBytes has the high bit set in the lowest zero byte of x (and maybe in
// bytes above it, never below): x's first zero byte is its lowest set bit.
func ZeroBytes(x uint64) uint64 {
	return (x - 0x0101010101010101) &^ x & 0x8080808080808080
}

// ShortString is about how many bytes of a string StringEnd reads one by one
// before its vectorized search.
const ShortString = 32
