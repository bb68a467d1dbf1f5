package config

import (
	"crypto/sha256"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// The admin and tracing blocks (docs/console.md):
// the console's own listener and bearer key, and OpenTelemetry export.

// Admin is the operator's console block. Without admin.listen the console
// is off.
type Admin struct {
	// Listen is the console's address, never the API port's; "" = off.
	// A non-loopback address needs Key. Restart-only.
	Listen string `yaml:"listen"`
	// KeyDigest is the SHA-256 of admin.key; the key itself is not kept.
	// Zero when HasKey is false.
	KeyDigest [32]byte `yaml:"-"`
	// HasKey is true when admin.key is set: every console request then
	// needs "Authorization: Bearer <key>".
	HasKey bool `yaml:"-"`
}

// Enabled reports whether the console listens.
func (a *Admin) Enabled() bool { return a.Listen != "" }

// Tracing is the OpenTelemetry block. Without tracing.otlp_endpoint
// nothing is traced.
type Tracing struct {
	// OTLPEndpoint is the collector's OTLP/HTTP URL (http or https); a URL
	// without a path gets /v1/traces. "" = off. Restart-only.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// SampleRatio is the share of traces sampled for requests that arrive
	// without a sampled traceparent, 0 to 1. Default 1.
	SampleRatio float64 `yaml:"sample_ratio"`
}

// Enabled reports whether spans are exported.
func (t *Tracing) Enabled() bool { return t.OTLPEndpoint != "" }

// MinAdminKeyBytes is the shortest admin.key accepted.
const MinAdminKeyBytes = 16

var (
	adminKeys   = []string{"listen", "key"}
	tracingKeys = []string{"otlp_endpoint", "sample_ratio"}
)

// decodeObservability is phase 1 for the admin and tracing blocks. The
// admin key is hashed here and dropped, as client keys are.
func (d *decoder) decodeObservability(top map[string]ast.Node, cfg *Config) {
	cfg.Tracing.SampleRatio = 1
	am := d.fields(top["admin"], "admin", "admin", adminKeys...)
	d.setStr(am, "admin", "listen", &cfg.Admin.Listen)
	if s, ok := d.str(am["key"], "admin.key", "a string"); ok {
		if len(s) < MinAdminKeyBytes {
			d.problemf("admin.key", "is %d characters long; want at least %d (switchyard keys new makes one)", len(s), MinAdminKeyBytes)
		} else {
			cfg.Admin.KeyDigest, cfg.Admin.HasKey = sha256.Sum256([]byte(s)), true
		}
	}
	tm := d.fields(top["tracing"], "tracing", "tracing", tracingKeys...)
	d.setStr(tm, "tracing", "otlp_endpoint", &cfg.Tracing.OTLPEndpoint)
	d.setRatio(tm, "tracing", "sample_ratio", &cfg.Tracing.SampleRatio)
}

// setRatio decodes m[key], a number from 0 to 1, into *dst when present.
func (d *decoder) setRatio(m map[string]ast.Node, path, key string, dst *float64) {
	p, n := join(path, key), m[key]
	r := d.value(n, p)
	if r == nil {
		return
	}
	var s string
	switch r.(type) {
	case *ast.FloatNode, *ast.IntegerNode:
		s, _ = scalarText(r)
	case *ast.StringNode:
		var ok bool
		if s, ok = d.str(n, p, "a number from 0 to 1"); !ok {
			return
		}
	default:
		d.addAt(nodePos(n), p, "got %s; want a number from 0 to 1, such as 0.01", describe(r))
		return
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
		d.addAt(nodePos(n), p, "%s is not a number from 0 to 1; want e.g. 0.01 (one trace in a hundred) or 1 (all)", quoteShort(s))
		return
	}
	*dst = v
}

// validateObservability is phase 4 for the admin and tracing blocks.
func (d *decoder) validateObservability(cfg *Config) {
	if a := &cfg.Admin; d.has["admin.listen"] || a.Listen != "" {
		switch host, port, err := net.SplitHostPort(a.Listen); {
		case err != nil || port == "":
			d.problemf("admin.listen", "%s is not a host:port address; want e.g. \"127.0.0.1:9090\"", quoteShort(a.Listen))
		case !a.HasKey && !LoopbackHost(host) && !d.decodeBad["admin.key"]:
			d.problemf("admin.listen", "%s is not a loopback address and admin.key is not set; set admin.key (every console request then needs it) or listen on 127.0.0.1",
				quoteShort(a.Listen))
		case a.Listen == cfg.Server.Listen && port != "0":
			d.problemf("admin.listen", "%s is server.listen; want a port of its own for the console", quoteShort(a.Listen))
		}
	} else if d.has["admin.key"] {
		d.problemf("admin.key", "is set but admin.listen is not; set admin.listen, such as \"127.0.0.1:9090\", to turn the console on")
	}
	if e := cfg.Tracing.OTLPEndpoint; e != "" {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			d.problemf("tracing.otlp_endpoint", "%s is not an OTLP/HTTP URL; want http(s)://host:port[/path], such as \"http://otel-collector:4318\"", quoteShort(e))
		}
	} else if d.has["tracing.sample_ratio"] {
		d.problemf("tracing.sample_ratio", "is set but tracing.otlp_endpoint is not; set the collector's URL, such as \"http://otel-collector:4318\", to turn tracing on")
	}
}

// LoopbackHost reports whether host (of a host:port) binds loopback only:
// "localhost" or a loopback IP. An empty host binds every interface.
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
