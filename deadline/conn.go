package deadline

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// Conn is a net.Conn whose deadlines are armed lazily (see Lazy), for the
// server's accepted connections. It keeps what the server and the
// gateway's own code look for on an accepted TCP connection: the raw socket
// (SyscallConn, for the client peeks) and the keep-alive settings
// (fasthttp's TCPKeepalive).
//
// A read deadline is armed by the next Read, not when it is set: fasthttp
// sets the idle timeout before it waits for a keep-alive connection's next
// request and the (shorter) read timeout once its first byte is in, and a
// small request is then read whole from the buffer, so the read timeout
// never bounds a read and the idle timeouts of consecutive requests are
// nearly the same deadline: nothing is armed. A deadline therefore applies
// to Reads that start after it was set, not to one already waiting: the
// server sets them from the goroutine that reads, and closes a connection
// to interrupt it.
type Conn struct {
	net.Conn
	rd, wd Lazy
	// read is the read deadline set and not yet armed, when readSet.
	read    time.Time
	readSet bool
}

// SetReadDeadline sets the deadline of the Reads that follow.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.read, c.readSet = t, true
	return nil
}

// Read arms the read deadline last set, unless Lazy.Skip allows leaving the
// armed one, and reads.
func (c *Conn) Read(p []byte) (int, error) {
	if c.readSet {
		c.readSet = false
		if err := c.rd.Set(c.read, c.Conn.SetReadDeadline); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(p)
}

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
