package upstream

import "github.com/switchyard/switchyard/provider"

// secret is one credential to redact (see provider.Redact).
type secret = provider.Secret

// secretsOf returns a target's credentials to redact.
func secretsOf(e *Endpoint) []secret { return provider.SecretsOf(e) }

// secretList returns the credentials to redact now: the static ones, and
// the current and previous access tokens of a token source.
func (t *Target) secretList() []secret {
	if ts := t.Endpoint.Token; ts != nil {
		return ts.Secrets()
	}
	return t.secrets
}

// redact replaces every occurrence of t's credentials in b with
// [REDACTED] (see provider.Redact): b itself when none occurs.
func (t *Target) redact(b []byte) []byte { return provider.Redact(b, t.secretList()) }
