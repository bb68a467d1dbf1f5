//go:build linux

package upstream

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// errNotLiteral: the address is not an IP literal (dialShallow does not
// resolve names; dialTCP hands those to fasthttp's dialer).
var errNotLiteral = errors.New("not an IP address literal")

// dialShallow connects to addr, an IP literal host:port (errNotLiteral
// for anything else), with a non-blocking connect whose end it awaits
// through the runtime poller (os.File's RawConn), so the calling
// goroutine's stack stays shallow while it waits. The connection is what
// net.Dialer makes: TCP_NODELAY, keep-alive probes after 15 s idle. A
// connect still running at timeout is fasthttp.ErrDialTimeout, as
// fasthttp's own dialer reports it.
func dialShallow(addr string, timeout time.Duration) (net.Conn, error) {
	ap, ok := ipLiteral(addr)
	if !ok {
		return nil, errNotLiteral
	}
	return connectShallow(ap, timeout)
}

// ipLiteral parses addr as an IP literal host:port without a zone. Not
// netip.ParseAddrPort, whose 464-byte frame was the deepest of a request's
// path to its first event.
func ipLiteral(addr string) (netip.AddrPort, bool) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return netip.AddrPort{}, false
	}
	host, port := addr[:i], addr[i+1:]
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	} else if strings.IndexByte(host, ':') >= 0 {
		return netip.AddrPort{}, false // an IPv6 address needs brackets
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return netip.AddrPort{}, false
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip, uint16(p)), true
}

// connectShallow is dialShallow's connect to ap.
func connectShallow(ap netip.AddrPort, timeout time.Duration) (net.Conn, error) {
	ip := ap.Addr().Unmap()
	family := syscall.AF_INET6
	var sa syscall.Sockaddr
	if ip.Is4() {
		family, sa = syscall.AF_INET, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}
	} else {
		sa = &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16()}
	}
	fail := func(op string, err error) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: os.NewSyscallError(op, err)}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
	if err != nil {
		return fail("socket", err)
	}
	switch err := syscall.Connect(fd, sa); err {
	case nil, syscall.EINPROGRESS, syscall.EALREADY, syscall.EINTR:
	default:
		syscall.Close(fd) //nolint:errcheck // failed already
		return fail("connect", err)
	}
	// A non-blocking descriptor: os.File registers it with the poller.
	f := os.NewFile(uintptr(fd), "")
	defer f.Close() //nolint:errcheck // net.FileConn holds a duplicate
	if err := f.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return fail("connect", err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return fail("connect", err)
	}
	var connErr error
	// Writable means the connect ended: SO_ERROR says how (as net's own
	// connect reads it); a spurious wake-up finds no peer yet and waits on.
	werr := rc.Write(func(s uintptr) bool {
		n, err := syscall.GetsockoptInt(int(s), syscall.SOL_SOCKET, syscall.SO_ERROR)
		if err != nil {
			connErr = err
			return true
		}
		switch e := syscall.Errno(n); e {
		case syscall.EINPROGRESS, syscall.EALREADY, syscall.EINTR:
			return false
		case 0:
			if _, err := syscall.Getpeername(int(s)); err != nil {
				return false
			}
			return true
		default:
			connErr = e
			return true
		}
	})
	if werr != nil {
		if errors.Is(werr, os.ErrDeadlineExceeded) {
			return nil, fasthttp.ErrDialTimeout
		}
		return fail("connect", werr)
	}
	if connErr != nil {
		return fail("connect", connErr)
	}
	c, err := net.FileConn(f)
	if err != nil {
		return fail("connect", err)
	}
	tc := c.(*net.TCPConn)
	// net.Dialer's defaults; net.FileConn sets TCP_NODELAY too.
	tc.SetNoDelay(true) //nolint:errcheck // a setting, not a failure
	//nolint:errcheck // a setting, not a failure
	tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 15 * time.Second, Count: 9})
	return tc, nil
}
