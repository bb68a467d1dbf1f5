//go:build !linux

package upstream

import (
	"errors"
	"net"
	"time"
)

// errNotLiteral: dialShallow does not handle the address.
var errNotLiteral = errors.New("not dialed shallow")

// dialShallow is Linux-only; elsewhere fasthttp's dialer connects every address.
func dialShallow(string, time.Duration) (net.Conn, error) { return nil, errNotLiteral }
