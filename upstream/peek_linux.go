package upstream

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// peeker looks at a socket's receive queue without consuming or blocking:
// recv(MSG_PEEK|MSG_DONTWAIT) of up to len(buf) bytes, through RawConn.Control (which,
// unlike RawConn.Read, ignores a read deadline that has passed: the server's
// request read deadline may well have while a long call runs). The callback
// is a method value made once, so a peek allocates nothing.
type peeker struct {
	raw syscall.RawConn
	fn  func(fd uintptr)
	buf [32]byte
	n   uintptr
	err syscall.Errno
}

// peekState is what a peek found.
type peekState uint8

const (
	// peekNothing: the socket is open with nothing waiting (or it cannot
	// be peeked at).
	peekNothing peekState = iota
	// peekData: bytes are waiting.
	peekData
	// peekClosed: the peer closed (FIN) or reset the connection.
	peekClosed
)

func (p *peeker) init(c net.Conn) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	p.raw = raw
	p.fn = p.peekFD
}

// peekFD is the peek itself. recv with MSG_DONTWAIT never blocks, so it is
// made as a raw system call, without telling the scheduler (as the runtime
// makes its own non-blocking calls): that bookkeeping cost as much as the
// call on a request's path, where every reused connection is peeked.
func (p *peeker) peekFD(fd uintptr) {
	p.n, _, p.err = unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p.buf[0])), uintptr(len(p.buf)),
		unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
}

// seen returns the bytes the last peek that found data saw (at most 32).
func (p *peeker) seen() []byte { return p.buf[:min(int(p.n), len(p.buf))] }

// state peeks once. It must not run concurrently with itself.
func (p *peeker) state() peekState {
	if p.raw == nil {
		return peekNothing
	}
	if p.raw.Control(p.fn) != nil {
		return peekClosed // the fd is closed
	}
	switch {
	case p.err == 0 && p.n > 0:
		return peekData
	case p.err == 0:
		return peekClosed // a zero-byte read: end of stream
	case p.err == unix.EAGAIN || p.err == unix.EINTR:
		return peekNothing
	}
	return peekClosed // ECONNRESET and the like
}
