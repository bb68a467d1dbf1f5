package daemon

import (
	"net"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/config"
)

// warnOpen logs a warning when cfg has no client keys and the gateway
// listens beyond loopback (docs/client-keys.md): whoever reaches the address spends
// every target's credentials and claims any user or metadata route.
func warnOpen(log zerolog.Logger, bind string, cfg *config.Config) {
	if cfg.Auth.Enabled() || loopback(bind) {
		return
	}
	log.Warn().Str("listen", bind).
		Msg("no auth block: the gateway is open to every client that reaches this address beyond loopback; configure auth.keys (switchyard keys new) or listen on 127.0.0.1")
}

// loopback reports whether addr (host:port) binds loopback only: an IP
// loopback address or "localhost". An empty host binds every interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
