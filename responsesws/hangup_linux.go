package responsesws

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// hungUp reports whether the peer of c has closed its side or reset the
// connection, without reading anything: poll(POLLRDHUP) says so even when
// bytes the peer sent before closing are still waiting (a peek would see
// only those). False when c is not a socket this can ask.
func hungUp(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var revents int16
	if raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			revents = fds[0].Revents
		}
	}) != nil {
		return true // the descriptor is closed
	}
	return revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
}
