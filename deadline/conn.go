package deadline

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// Conn is a net.Conn whose deadlines are armed lazily (see Lazy). It keeps
// what the server and the gateway's own code look for on an accepted TCP
// connection: the raw socket (SyscallConn, for the client peeks) and the
// keep-alive settings (fasthttp's TCPKeepalive).
type Conn struct {
	net.Conn
	rd, wd Lazy
}

// SetReadDeadline arms t for reads unless Lazy.Skip allows leaving it.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.rd.Set(t, c.Conn.SetReadDeadline) }

// SetWriteDeadline arms t for writes unless Lazy.Skip allows leaving it.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.wd.Set(t, c.Conn.SetWriteDeadline) }

// SetDeadline sets both.
func (c *Conn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

var errNotSocket = errors.New("deadline: not a socket")

// SyscallConn returns the wrapped connection's raw socket.
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errNotSocket
}

// SetKeepAlive forwards to a TCP connection.
func (c *Conn) SetKeepAlive(on bool) error {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		return tc.SetKeepAlive(on)
	}
	return nil
}

// SetKeepAlivePeriod forwards to a TCP connection.
func (c *Conn) SetKeepAlivePeriod(d time.Duration) error {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		return tc.SetKeepAlivePeriod(d)
	}
	return nil
}

// Listener wraps every connection ln accepts in a Conn.
func Listener(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &Conn{Conn: c}, nil
}
