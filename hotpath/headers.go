package hotpath

import "bytes"

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

// next returns the next field line: its name as sent and its value without
// the surrounding whitespace. A continuation line (obsolete line folding,
// RFC 9112 §5.2) comes back with folded set and a nil name. ok is false at
// the end of the section.
func (s *fieldLines) next() (name, value []byte, folded, ok bool) {
	for len(s.raw) > 0 {
		var line []byte
		if i := bytes.IndexByte(s.raw, '\n'); i >= 0 {
			line, s.raw = s.raw[:i], s.raw[i+1:]
		} else {
			line, s.raw = s.raw, nil
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) == 0 {
			break // the empty line that ends the section
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, trimOWS(line), true, true
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue // fasthttp refuses such a head before the handler runs
		}
		return line[:colon], trimOWS(line[colon+1:]), false, true
	}
	s.raw = nil
	return nil, nil, false, false
}

// headerField returns the value of the first field called name (compared
// case-insensitively; name is lowercase) in the header section raw, and
// how many fields of that name it holds.
func headerField(raw []byte, name string) (value []byte, n int) {
	s := fieldLines{raw: raw}
	for {
		k, v, _, ok := s.next()
		if !ok {
			return value, n
		}
		if equalFoldLower(k, name) {
			if n == 0 {
				value = v
			}
			n++
		}
	}
}

// trimOWS drops the spaces and tabs around b.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
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
