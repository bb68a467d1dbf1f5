//go:build unix

package responsesws

import (
	"net"
	"os"
	"syscall"

	"github.com/valyala/fasthttp"
	"golang.org/x/sys/unix"
)

// socketPair connects a new Unix socketpair, hands one end to srv and
// returns the other. Both ends are real sockets, so the handler's cancel
// watch can peek at its end (MSG_PEEK) as at any client's.
func socketPair(srv *fasthttp.Server) (net.Conn, error) {
	// SOCK_CLOEXEC is not on every unix (macOS): close-on-exec is set
	// after, under the fork lock, as the standard library does.
	syscall.ForkLock.RLock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, os.NewSyscallError("socketpair", err)
	}
	client, err := fileConn(fds[0])
	if err != nil {
		unix.Close(fds[1])
		return nil, err
	}
	server, err := fileConn(fds[1])
	if err != nil {
		client.Close()
		return nil, err
	}
	go srv.ServeConn(server) //nolint:errcheck // the handler reports each request; a connection error ends only this exchange
	return client, nil
}

// fileConn makes a net.Conn of the socket fd, which it takes over.
func fileConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "responses-bridge")
	c, err := net.FileConn(f) // dups fd
	f.Close()
	return c, err
}
