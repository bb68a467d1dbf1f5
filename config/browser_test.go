package config

import (
	"reflect"
	"strings"
	"testing"
)

// allowed_hosts and allowed_origins: well-formed entries load, normalized
// to the form the gateway compares; a bad entry is reported with its path,
// line and what is accepted.
func TestBrowserListsLoadNormalized(t *testing.T) {
	src := strings.Replace(baseYAML, "  shutdown_timeout: 30s\n", "  shutdown_timeout: 30s\n"+
		"  allowed_hosts: [Gateway.Internal, 10.0.0.7, \"[fd00::1]\"]\n"+
		"  allowed_origins: [\"HTTPS://App.Example.com\", \"https://app.example.com:443\", \"http://localhost:3000\", \"http://[::1]:80\"]\n", 1)
	cfg := mustParse(t, src, noEnv)
	if want := []string{"gateway.internal", "10.0.0.7", "[fd00::1]"}; !reflect.DeepEqual(cfg.Server.AllowedHosts, want) {
		t.Errorf("allowed_hosts %q, want %q", cfg.Server.AllowedHosts, want)
	}
	if want := []string{"https://app.example.com", "https://app.example.com", "http://localhost:3000", "http://[::1]"}; !reflect.DeepEqual(cfg.Server.AllowedOrigins, want) {
		t.Errorf("allowed_origins %q, want %q", cfg.Server.AllowedOrigins, want)
	}
	if cfg := mustParse(t, baseYAML, noEnv); cfg.Server.AllowedHosts != nil || cfg.Server.AllowedOrigins != nil {
		t.Errorf("defaults: %q %q, want none", cfg.Server.AllowedHosts, cfg.Server.AllowedOrigins)
	}
}

func TestBrowserListProblems(t *testing.T) {
	const (
		hostWant   = `; want a host name such as "gateway.internal", an IPv4 address or a bracketed IPv6 address, without scheme or port`
		originWant = `; want a browser origin such as "https://app.example.com" or "http://localhost:3000"`
	)
	for _, tc := range []struct {
		line string
		w    want
	}{
		{"  allowed_hosts: [\"gw:8080\"]", want{"server.allowed_hosts[0]", 6, "", `"gw:8080" has a port (every port of an allowed host is accepted)` + hostWant}},
		{"  allowed_hosts: [ok.example, \"http://gw\"]", want{"server.allowed_hosts[1]", 6, "", `"http://gw" has a scheme` + hostWant}},
		{"  allowed_hosts: [\"\"]", want{"server.allowed_hosts[0]", 6, "", `"" is empty` + hostWant}},
		{"  allowed_hosts: [\"a..b\"]", want{"server.allowed_hosts[0]", 6, "", `"a..b" has an empty or over-long label` + hostWant}},
		{"  allowed_hosts: [\"[::1\"]", want{"server.allowed_hosts[0]", 6, "", `"[::1" has a port or an unclosed bracket` + hostWant}},
		{"  allowed_origins: [\"https://app.example.com/\"]", want{"server.allowed_origins[0]", 6, "", `"https://app.example.com/" has a path, query or fragment (an origin is scheme://host[:port], no trailing slash)` + originWant}},
		{"  allowed_origins: [\"null\"]", want{"server.allowed_origins[0]", 6, "", `"null" is not accepted (any page can send it)` + originWant}},
		{"  allowed_origins: [\"*\"]", want{"server.allowed_origins[0]", 6, "", `"*" is not accepted (any page can send it)` + originWant}},
		{"  allowed_origins: [\"app.example.com\"]", want{"server.allowed_origins[0]", 6, "", `"app.example.com" does not start with http:// or https://` + originWant}},
		{"  allowed_origins: [\"ftp://app.example.com\"]", want{"server.allowed_origins[0]", 6, "", `"ftp://app.example.com" does not start with http:// or https://` + originWant}},
		{"  allowed_origins: [\"http://a:99999\"]", want{"server.allowed_origins[0]", 6, "", `"http://a:99999" has a port out of range` + originWant}},
	} {
		src := strings.Replace(baseYAML, "  shutdown_timeout: 30s\n", "  shutdown_timeout: 30s\n"+tc.line+"\n", 1)
		checkProblems(t, src, problemsOf(t, src, noEnv), []want{tc.w})
	}
}
