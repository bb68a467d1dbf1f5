//go:build !linux

package responsesws

import "net"

// hungUp cannot tell without reading on this platform: a departure is then
// seen when the socket next reads or writes.
func hungUp(net.Conn) bool { return false }
