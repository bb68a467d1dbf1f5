package telemetry

import (
	"net/url"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/upstream"
)

// TargetFields returns the loggable view of a runtime target, for
// ev.Object("target", TargetFields(t)) or ev.EmbedObject(...): its name,
// provider and base URL host. Credentials, the base URL's user info, path
// and query (where some deployments carry a key) are never written. Never
// log a Target (or its Endpoint) any other way: ev.Interface would write
// the API key.
func TargetFields(t *upstream.Target) zerolog.LogObjectMarshaler {
	return targetFields{t}
}

type targetFields struct{ t *upstream.Target }

// MarshalZerologObject implements zerolog.LogObjectMarshaler.
func (f targetFields) MarshalZerologObject(e *zerolog.Event) {
	if f.t == nil {
		return
	}
	e.Str("name", f.t.Name).Str("provider", f.t.Provider)
	if h := hostOf(f.t.Endpoint.BaseURL); h != "" {
		e.Str("host", h)
	}
}

// hostOf returns the host[:port] of a base URL, or "" when it does not
// parse; never the user info, path or query.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// ConfigFields returns the loggable summary of a loaded configuration, for
// the startup and reload log lines: file, hash (12 hex digits), the number
// of conditions and the targets as {name, provider, host} objects. No
// credential, base URL path/query or environment value is written.
func ConfigFields(c *config.Config) zerolog.LogObjectMarshaler {
	return configFields{c}
}

type configFields struct{ c *config.Config }

// MarshalZerologObject implements zerolog.LogObjectMarshaler.
func (f configFields) MarshalZerologObject(e *zerolog.Event) {
	if f.c == nil {
		return
	}
	e.Str("file", f.c.File).
		Str("hash", hashPrefix(f.c.Hash)).
		Int("conditions", len(f.c.Strategy.Conditions)).
		Array("targets", configTargets(f.c.Targets))
}

type configTargets []config.Target

// MarshalZerologArray implements zerolog.LogArrayMarshaler.
func (ts configTargets) MarshalZerologArray(a *zerolog.Array) {
	for i := range ts {
		t := &ts[i]
		d := zerolog.Dict().Str("name", t.VirtualKey).Str("provider", t.Provider)
		if h := hostOf(t.BaseURL); h != "" {
			d.Str("host", h)
		}
		a.Dict(d)
	}
}
