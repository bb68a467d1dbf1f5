package upstream

import (
	"bytes"
	"strings"
)

// redactedSecret replaces a target's credential in bytes headed to a client.
var redactedSecret = []byte("[REDACTED]")

// minSecretLen is the shortest credential redacted: a shorter value (a
// placeholder such as "none" for a local server) is no secret, and
// replacing it would mangle ordinary text.
const minSecretLen = 8

// secretsOf returns the byte strings to redact for a target's credentials:
// each credential, and its JSON form with '/' escaped as "\/" (AWS secrets
// hold '/').
func secretsOf(e *Endpoint) [][]byte {
	var out [][]byte
	for _, s := range [...]string{e.APIKey, e.AWSAccessKeyID, e.AWSSecretAccessKey, e.AWSSessionToken} {
		if len(s) < minSecretLen {
			continue
		}
		out = append(out, []byte(s))
		if strings.Contains(s, "/") {
			out = append(out, []byte(strings.ReplaceAll(s, "/", `\/`)))
		}
	}
	return out
}

// redact replaces every occurrence of t's credentials in b with
// [REDACTED] and returns the result: b itself when none occurs (one scan
// per credential, no allocation), else a new slice. An upstream may quote
// the key it received in an error message; no part of it may reach the
// client.
func (t *Target) redact(b []byte) []byte {
	for _, s := range t.secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, redactedSecret)
		}
	}
	return b
}
