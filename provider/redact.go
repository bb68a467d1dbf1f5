package provider

import (
	"bytes"
	"unicode/utf8"

	"github.com/switchyard/switchyard/internal/byteconv"
)

// redactedSecret replaces a target's credential in bytes headed to a client.
var redactedSecret = []byte("[REDACTED]")

// minSecretLen is the shortest credential redacted: a shorter value (a
// placeholder such as "none" for a local server) is no secret, and
// replacing it would mangle ordinary text.
const minSecretLen = 8

// maxSecrets is how many credentials a target redacts: api_key, the three
// AWS values, and an OAuth access token with the one it replaced.
const maxSecrets = 6

// Secret is one credential to redact and the set of its bytes.
type Secret struct {
	value []byte
	// rare is the index in value of its least common byte in answers
	// (byteRank), which index looks for first.
	rare int
	// bytes holds the bytes of value (utf8.RuneSelf standing for any
	// non-ASCII one): an escape decoding to another byte cannot be part of
	// an occurrence.
	bytes byteSet
}

// byteSet is a set of bytes, bit c%64 of word c/64 for byte c.
type byteSet [4]uint64

func (s *byteSet) holds(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }

// SecretsOf returns a target's credentials to redact: those of at least
// minSecretLen bytes, at most maxSecrets.
func SecretsOf(e *Endpoint) []Secret {
	var out []Secret
	for _, v := range [...]string{e.APIKey, e.AWSAccessKeyID, e.AWSSecretAccessKey, e.AWSSessionToken} {
		out = appendSecret(out, v)
	}
	return out
}

// appendSecret appends v to ss when it is long enough to be a secret.
func appendSecret(ss []Secret, v string) []Secret {
	if len(v) < minSecretLen || len(ss) == maxSecrets {
		return ss
	}
	s := Secret{value: []byte(v)}
	for i := range len(v) {
		c := min(v[i], utf8.RuneSelf) // any non-ASCII byte as one
		s.bytes[c>>6] |= 1 << (c & 63)
		if byteRank[v[i]] > byteRank[v[s.rare]] {
			s.rare = i
		}
	}
	return append(ss, s)
}

// commonBytes lists the bytes of answers (JSON around English text) from
// the most common on; byteRank is each byte's place, later = rarer, and
// 255 for one not listed (capitals, most punctuation, non-ASCII).
const commonBytes = ` etaoinsrhldcu"mfpgwyb,:.{}01v2k3456789-_/xjqz`

var byteRank = func() (r [256]uint8) {
	for i := range r {
		r[i] = 255
	}
	for i := range len(commonBytes) {
		r[commonBytes[i]] = uint8(i)
	}
	return r
}()

// index is bytes.Index(b, s.value). It looks for the secret's rarest byte
// (rare) with IndexByte and compares the rest where it finds one:
// bytes.Index looks for the first byte, and a key's first bytes ("sk-",
// "bench") are common letters of the text around it. After more misses
// than bytes.Index would take, it hands the rest to bytes.Index.
func (s *Secret) index(b []byte) int {
	v, k := s.value, s.rare
	for from, misses := 0, 0; from+len(v) <= len(b); misses++ {
		i := bytes.IndexByte(b[from+k:len(b)-len(v)+k+1], v[k])
		if i < 0 {
			return -1
		}
		at := from + i
		if bytes.Equal(b[at:at+len(v)], v) {
			return at
		}
		from = at + 1
		if misses > 4+from>>4 {
			if j := bytes.Index(b[from:], v); j >= 0 {
				return from + j
			}
			return -1
		}
	}
	return -1
}

// Redact replaces every occurrence of secrets in b with [REDACTED] and
// returns the result: b itself when none occurs (no allocation), else one
// new slice. An occurrence is the literal value or its JSON-escaped form,
// any byte written as \uXXXX or a simple escape such as \/: an upstream
// may quote the key it received in an error message, and a client's JSON
// decoder would restore it.
func Redact(b []byte, secrets []Secret) []byte {
	if len(secrets) == 0 {
		return b
	}
	// Fast path: without a backslash nothing is escaped, and only the
	// literal values are searched for; nor when every escape decodes to a
	// byte no credential holds (\n, \u00e9 against ASCII keys).
	escaped := false
	if bytes.IndexByte(b, '\\') >= 0 {
		var held byteSet
		for i := range secrets {
			for w, bits := range secrets[i].bytes {
				held[w] |= bits
			}
		}
		q, _, _ := nextEscape(b, 0, &held)
		escaped = q >= 0
	}
	var next [maxSecrets]span
	for i := range secrets {
		next[i] = findSecret(b, 0, &secrets[i], escaped)
	}
	m := earliest(next[:len(secrets)])
	if m.start < 0 {
		return b
	}
	// Each match spans at least minSecretLen bytes and grows by at most
	// len(redactedSecret)-minSecretLen, so this capacity is never outgrown.
	out := make([]byte, 0, len(b)+len(b)/minSecretLen*(len(redactedSecret)-minSecretLen))
	from := 0
	for ; m.start >= 0; m = earliest(next[:len(secrets)]) {
		out = append(out, b[from:m.start]...)
		out = append(out, redactedSecret...)
		from = m.end
		for i := range secrets {
			if next[i].start >= 0 && next[i].start < from {
				next[i] = findSecret(b, from, &secrets[i], escaped)
			}
		}
	}
	return append(out, b[from:]...)
}

// span is an occurrence b[start:end]; start < 0 means none.
type span struct{ start, end int }

var noSpan = span{-1, -1}

// earliest returns the first-starting span of ms (the longest of those
// starting together), or noSpan.
func earliest(ms []span) span {
	best := noSpan
	for _, m := range ms {
		if m.start >= 0 && (best.start < 0 || m.start < best.start || m.start == best.start && m.end > best.end) {
			best = m
		}
	}
	return best
}

// findSecret returns the first occurrence of s in b at or after from:
// literal only, or (escaped) with any of its bytes JSON-escaped.
func findSecret(b []byte, from int, s *Secret, escaped bool) span {
	v := s.value
	for p := from; p < len(b); {
		q, c, w := -1, byte(0), 0
		if escaped {
			q, c, w = nextEscape(b, p, &s.bytes)
		}
		if q < 0 {
			if i := s.index(b[p:]); i >= 0 {
				return span{p + i, p + i + len(v)}
			}
			return noSpan
		}
		// Fast path: an occurrence wholly before the escape at q is
		// literal.
		if q-p >= len(v) {
			if i := s.index(b[p:q]); i >= 0 {
				return span{p + i, p + i + len(v)}
			}
		}
		// Slow path: one that runs through the escape at q starts at q or
		// in the len(v)-1 literal bytes before it.
		for at := max(p, q-len(v)+1); at < q; at++ {
			i := bytes.IndexByte(b[at:q], v[0])
			if i < 0 {
				break
			}
			at += i
			if e := matchEscaped(b, at, v); e >= 0 {
				return span{at, e}
			}
		}
		if c == v[0] || c == utf8.RuneSelf {
			if e := matchEscaped(b, q, v); e >= 0 {
				return span{q, e}
			}
		}
		p = q + w
	}
	return noSpan
}

// nextEscape returns the index q of the first escape in b at or after p
// that decodes to a byte in holds, and its escapeHead; q is -1 when there
// is none. Others, such as \n or \u00e9 against an ASCII key, cannot be
// part of an occurrence and are skipped whole.
func nextEscape(b []byte, p int, in *byteSet) (q int, c byte, width int) {
	for p < len(b) {
		i := bytes.IndexByte(b[p:], '\\')
		if i < 0 {
			break
		}
		p += i
		c, w := escapeHead(b[p:])
		if in.holds(c) {
			return p, c, w
		}
		p += w
	}
	return -1, 0, 0
}

// escapeHead returns the byte the escape at the start of b decodes to and
// the escape's width: utf8.RuneSelf for any non-ASCII character (SecretsOf
// marks it held by a non-ASCII secret), and '\\' with width 1 for an
// invalid escape (the backslash then stands for itself).
func escapeHead(b []byte) (c byte, width int) {
	if len(b) < 2 {
		return '\\', 1
	}
	switch b[1] {
	case 'u':
		r := byteconv.Hex4(b[2:])
		switch {
		case r < 0:
			return '\\', 1
		case r >= utf8.RuneSelf:
			return utf8.RuneSelf, 6
		}
		return byte(r), 6
	case '"', '\\', '/':
		return b[1], 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	}
	return '\\', 1
}

// matchEscaped returns the end of an occurrence of s starting at b[i],
// each byte of s written literally or JSON-escaped, or -1. A backslash is
// read as an escape first, as a JSON decoder reads it.
func matchEscaped(b []byte, i int, s []byte) int {
	for j := 0; j < len(s); {
		if i >= len(b) {
			return -1
		}
		if b[i] == '\\' {
			if enc, n, w := decodeEscape(b[i:]); n > 0 && bytes.HasPrefix(s[j:], enc[:n]) {
				i, j = i+w, j+n
				continue
			}
		}
		if b[i] != s[j] {
			return -1
		}
		i, j = i+1, j+1
	}
	return i
}

// decodeEscape decodes the JSON escape at the start of b into its n UTF-8
// bytes enc[:n], width bytes long; n == 0 when b does not start with a
// valid escape. A \u surrogate pair is one character; an unpaired
// surrogate decodes to U+FFFD, as encoding/json does.
func decodeEscape(b []byte) (enc [utf8.UTFMax]byte, n, width int) {
	if len(b) < 2 || b[0] != '\\' {
		return enc, 0, 0
	}
	switch b[1] {
	case '"', '\\', '/':
		enc[0] = b[1]
	case 'b':
		enc[0] = '\b'
	case 'f':
		enc[0] = '\f'
	case 'n':
		enc[0] = '\n'
	case 'r':
		enc[0] = '\r'
	case 't':
		enc[0] = '\t'
	case 'u':
		r := byteconv.Hex4(b[2:])
		if r < 0 {
			return enc, 0, 0
		}
		if r < utf8.RuneSelf {
			enc[0] = byte(r)
			return enc, 1, 6
		}
		width = 6
		if 0xD800 <= r && r < 0xDC00 && len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			if lo := byteconv.Hex4(b[8:]); 0xDC00 <= lo && lo < 0xE000 {
				r, width = 0x10000+(r-0xD800)<<10+(lo-0xDC00), 12
			}
		}
		return enc, utf8.EncodeRune(enc[:], rune(r)), width
	default:
		return enc, 0, 0
	}
	return enc, 1, 2
}
