package hotpath

import (
	"bytes"

	"github.com/switchyard/switchyard/internal/byteconv"
)

// The header section as received.
//
// fasthttp's view of a request's headers (Peek, All) is merged: it holds the
// header section and, once a chunked body has been read, the fields of its
// trailer section too, and Peek returns only the first of repeated fields.
// A header that decides a route or an identity must be read once, from the
// header section only, and a second copy of it is an error (RFC 9110
// §5.3, §6.5.1). So those are read here, from RequestHeader.RawHeaders:
// the bytes of the header section exactly as they arrived (fasthttp keeps
// them for every request it parses; nothing is allocated).

// fieldLines walks the field lines of a header section as RawHeaders
// returns it. The zero value is done; set raw to start.
type fieldLines struct{ raw []byte }

// next returns the next field line without its line ending; ok is false at
// the end of the section. A line that starts with a space or a tab is a
// continuation (obsolete line folding, RFC 9112 §5.2).
func (s *fieldLines) next() (line []byte, ok bool) {
	if len(s.raw) == 0 {
		return nil, false
	}
	if i := bytes.IndexByte(s.raw, '\n'); i >= 0 {
		line, s.raw = s.raw[:i], s.raw[i+1:]
	} else {
		line, s.raw = s.raw, nil
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) == 0 {
		s.raw = nil // the empty line that ends the section
		return nil, false
	}
	return line, true
}

// fieldValue returns the value of line, without the whitespace around it,
// when line is a field called name (lowercase; compared ignoring case).
// fasthttp refuses a head with whitespace before a colon, so the name is
// exactly the bytes before the first colon.
func fieldValue(line []byte, name string) ([]byte, bool) {
	if len(line) <= len(name) || line[len(name)] != ':' || !equalFoldLower(line[:len(name)], name) {
		return nil, false
	}
	return byteconv.TrimOWS(line[len(name)+1:]), true
}

// equalFoldLower reports whether b equals lower, a lowercase ASCII string,
// ignoring ASCII case.
func equalFoldLower(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
