package translate

import "github.com/switchyard/switchyard/internal/jsonw"

// argsShape follows a streamed tool call's arguments one fragment at a
// time, just far enough to tell whether they end as one JSON object: the
// first byte that is not white space is '{', brackets close in kind,
// strings end, and only white space follows the closing '}'. It keeps no
// bytes, so huge arguments cost nothing to hold. Numbers and literals are
// not checked: the client parses the whole input anyway; what this catches
// is arguments cut short (a length stop) or that are not JSON at all.
type argsShape struct {
	depth int
	// kinds has bit i set when nesting level i+1 is an array; levels past
	// 64 are not checked for kind.
	kinds                        uint64
	began, done, bad, inStr, esc bool
}

// feed takes the next fragment; false once the arguments cannot become a
// JSON object.
func (a *argsShape) feed(b []byte) bool {
	if a.bad {
		return false
	}
	for _, c := range b {
		if a.inStr {
			switch {
			case a.esc:
				a.esc = false
			case c == '\\':
				a.esc = true
			case c == '"':
				a.inStr = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		if a.done || !a.began && c != '{' {
			a.bad = true
			return false
		}
		a.began = true
		switch c {
		case '"':
			a.inStr = true
		case '{', '[':
			if a.depth < 64 {
				if c == '[' {
					a.kinds |= 1 << a.depth
				} else {
					a.kinds &^= 1 << a.depth
				}
			}
			a.depth++
		case '}', ']':
			a.depth--
			if a.depth < 64 && (a.kinds&(1<<a.depth) != 0) != (c == ']') {
				a.bad = true
				return false
			}
			a.done = a.depth == 0
		}
	}
	return true
}

// complete reports whether the arguments fed so far are one whole JSON
// object, or nothing at all (a call without parameters: input {}).
func (a *argsShape) complete() bool { return !a.bad && (!a.began || a.done) }

// Anthropic's error envelope, as package provider writes it (the two are
// held equal by a test there: provider imports this package, not the
// other way round).

// anthropicErrorType is the Anthropic error type of an answer with HTTP
// status.
func anthropicErrorType(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 429:
		return "rate_limit_error"
	case status == 503:
		return "overloaded_error"
	case status >= 400 && status < 500:
		return "invalid_request_error"
	}
	return "api_error"
}

// appendAnthropicError appends {"type":"error","error":{"type","message"}}.
func appendAnthropicError(dst []byte, status int, message string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":"`...)
	dst = append(dst, anthropicErrorType(status)...)
	dst = append(dst, `","message":`...)
	dst = jsonw.String(dst, message)
	return append(dst, "}}"...)
}
