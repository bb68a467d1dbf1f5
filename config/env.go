package config

import (
	"fmt"
	"strconv"
	"strings"
)

// expand replaces environment references in a string value (docs/configuration.md, Configuration reference):
//
//	${NAME}          the value of NAME; an unset NAME is a problem
//	${NAME:-default} the value of NAME, or default when NAME is unset or empty
//	$$               a literal "$" (so "$${NAME}" is the text "${NAME}")
//
// A "$" followed by anything else is kept as written, so values such as
// "pa$word" need no escaping. Substituted text is not expanded again.
// NAME is [A-Za-z_][A-Za-z0-9_]*; default runs to the first "}".
// expand returns the result and one message per problem found. When secret
// is set the messages quote nothing of s, which may hold a credential.
func expand(s string, lookup func(string) (string, bool), secret bool) (string, []string) {
	if !strings.Contains(s, "$") {
		return s, nil // Fast path: most values hold no reference.
	}
	var b strings.Builder
	var probs []string
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
			continue
		case '{':
		default:
			b.WriteByte(c)
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			frag := strconv.Quote(s[i:])
			if secret {
				frag = "\"${\" in a secret value"
			}
			probs = append(probs, fmt.Sprintf("unterminated %s; want ${NAME}, ${NAME:-default}, or $${ for a literal \"${\"", frag))
			return s, probs
		}
		ref := s[i+2 : i+2+end]
		i += 2 + end + 1
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validEnvName(name) {
			frag := strconv.Quote("${" + ref + "}")
			if secret {
				frag = "a ${...} in a secret value"
			}
			probs = append(probs, fmt.Sprintf("%s is not a valid environment reference; want ${NAME} or ${NAME:-default} with NAME made of letters, digits and _", frag))
			continue
		}
		v, ok := lookup(name)
		switch {
		case hasDef && (!ok || v == ""):
			b.WriteString(def)
		case ok:
			b.WriteString(v)
		default:
			probs = append(probs, fmt.Sprintf("environment variable %s is not set; set it, or write ${%s:-} for an empty default", name, name))
		}
	}
	return b.String(), probs
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
