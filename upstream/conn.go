package upstream

import (
	"net"
	"time"
)

// trackedConn wraps every upstream connection so the walk can find it again
// from a streamed Response: fasthttp records conn.LocalAddr() in the
// Response (Response.LocalAddr), and trackedConn answers with an address
// that points back to itself. tls.Conn forwards LocalAddr and the deadline
// setters to the wrapped conn, so this works for https too.
//
// Why: fasthttp sets one absolute read deadline (the attempt deadline) per
// response and keeps it while the body streams. That deadline must bound a
// stream only until its first event; after the commit the walk replaces it
// with an idle deadline per event (setStreamDeadline).
type trackedConn struct {
	net.Conn
	addr trackedAddr
}

type trackedAddr struct {
	net.Addr
	conn *trackedConn
}

func newTrackedConn(c net.Conn) *trackedConn {
	tc := &trackedConn{Conn: c}
	tc.addr = trackedAddr{Addr: c.LocalAddr(), conn: tc}
	return tc
}

// LocalAddr returns an address that leads back to the connection.
func (c *trackedConn) LocalAddr() net.Addr { return &c.addr }

// setStreamDeadline sets the read deadline of the connection behind a
// Response's local address; it reports false when the address is not one of
// ours (a custom dialer bypassing the Pool).
func setStreamDeadline(laddr net.Addr, deadline time.Time) bool {
	a, ok := laddr.(*trackedAddr)
	if !ok {
		return false
	}
	return a.conn.SetReadDeadline(deadline) == nil
}
