// Package byteconv holds the few byte helpers that the request scanners,
// the routing metadata parser and the upstream relay all need: one copy of
// each, allocation-free.
package byteconv

import "unsafe"

// String returns b as a string without copying; b must not change while
// the string is in use.
func String(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Bytes returns the bytes of s without copying; they must not be modified.
func Bytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// TrimOWS drops the spaces and tabs around b (HTTP's optional white space).
func TrimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// Hex4 returns the value of the four hex digits (either case) at the start
// of b, or -1 when b is shorter or holds another byte there.
func Hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	d0, d1, d2, d3 := unhex[b[0]], unhex[b[1]], unhex[b[2]], unhex[b[3]]
	if d0|d1|d2|d3 < 0 {
		return -1
	}
	return int(d0)<<12 | int(d1)<<8 | int(d2)<<4 | int(d3)
}

// unhex maps a hex digit (either case) to its value, any other byte to -1.
var unhex = func() (t [256]int8) {
	for c := range t {
		switch {
		case '0' <= c && c <= '9':
			t[c] = int8(c - '0')
		case 'a' <= c && c <= 'f':
			t[c] = int8(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			t[c] = int8(c - 'A' + 10)
		default:
			t[c] = -1
		}
	}
	return t
}()
