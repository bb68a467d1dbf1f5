package telemetry

import (
	"strings"
	"unicode/utf8"
)

// appendLabelValue appends s to dst as a quoted Prometheus label value:
// backslash, double quote and newline are escaped as the text exposition
// format requires (\\, \", \n), and invalid UTF-8 becomes U+FFFD, so a
// target name with odd characters can neither break a line nor end the
// value early.
func appendLabelValue(dst []byte, s string) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			dst = append(dst, `\\`...)
		case '"':
			dst = append(dst, `\"`...)
		case '\n':
			dst = append(dst, `\n`...)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// seriesName returns family{k1="v1",k2="v2",...} with every value escaped.
// kv holds label names and values alternately. Used off the request path
// only (registration and scrapes).
func seriesName(family string, kv ...string) string {
	if len(kv) == 0 {
		return family
	}
	b := make([]byte, 0, len(family)+16*len(kv))
	b = append(b, family...)
	b = append(b, '{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, kv[i]...)
		b = append(b, '=')
		b = appendLabelValue(b, kv[i+1])
	}
	return string(append(b, '}'))
}
