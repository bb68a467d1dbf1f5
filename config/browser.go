package config

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Browser-facing lists of the server block: server.allowed_hosts (DNS
// rebinding) and server.allowed_origins (cross-site requests). Entries are
// checked here and stored in the form the gateway compares: lowercased, an
// origin without its scheme's default port (browsers omit it).

// validateBrowserLists checks and normalizes s.AllowedHosts and
// s.AllowedOrigins in place.
func (d *decoder) validateBrowserLists(s *Server) {
	for i, h := range s.AllowedHosts {
		p := index("server.allowed_hosts", i)
		if msg := checkHostName(h); msg != "" {
			d.problemf(p, "%s %s; want a host name such as \"gateway.internal\", an IPv4 address or a bracketed IPv6 address, without scheme or port", quoteShort(h), msg)
			continue
		}
		s.AllowedHosts[i] = strings.ToLower(h)
	}
	for i, o := range s.AllowedOrigins {
		p := index("server.allowed_origins", i)
		norm, msg := normalizeOrigin(o)
		if msg != "" {
			d.problemf(p, "%s %s; want a browser origin such as \"https://app.example.com\" or \"http://localhost:3000\"", quoteShort(o), msg)
			continue
		}
		s.AllowedOrigins[i] = norm
	}
}

// checkHostName returns why h is not an allowed_hosts entry, or "".
func checkHostName(h string) string {
	switch {
	case h == "":
		return "is empty"
	case strings.Contains(h, "://"):
		return "has a scheme"
	case strings.ContainsAny(h, "/?#@ \t"):
		return "is not a bare host name"
	}
	if h[0] == '[' {
		if h[len(h)-1] != ']' {
			return "has a port or an unclosed bracket"
		}
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "is not a bracketed IPv6 address"
		}
		return ""
	}
	if strings.Contains(h, ":") {
		return "has a port (every port of an allowed host is accepted)"
	}
	if len(h) > 253 {
		return "is longer than 253 bytes"
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return "has an empty or over-long label"
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "has a character a host name cannot hold"
			}
		}
	}
	return ""
}

// normalizeOrigin returns o as a browser serializes it (lowercase, no
// default port), or why it is not an origin.
func normalizeOrigin(o string) (string, string) {
	if o == "" {
		return "", "is empty"
	}
	if o == "null" || o == "*" {
		return "", "is not accepted (any page can send it)"
	}
	u, err := url.Parse(o)
	if err != nil {
		return "", "is not a URL"
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return "", "does not start with http:// or https://"
	case u.Host == "" || u.Opaque != "":
		return "", "has no host"
	case u.User != nil:
		return "", "has user information"
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
		return "", "has a path, query or fragment (an origin is scheme://host[:port], no trailing slash)"
	}
	host, port := u.Hostname(), u.Port()
	if msg := checkHostName(bracket(host)); msg != "" {
		return "", "has a host that " + strings.TrimPrefix(msg, "is ")
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", "has a port out of range"
		}
		if (scheme == "http" && n == 80) || (scheme == "https" && n == 443) {
			port = ""
		} else {
			port = strconv.Itoa(n)
		}
	}
	out := scheme + "://" + strings.ToLower(bracket(host))
	if port != "" {
		out += ":" + port
	}
	return out, ""
}

// bracket puts an IPv6 address back in brackets.
func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}
