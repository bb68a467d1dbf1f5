package upstream

import (
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/deadline"
)

// trackedConn wraps every upstream connection so that the walk can find it
// again from a streamed Response (see fasthttp_reliance.go), a pooled one is
// checked before it carries another request (see Write: errStaleConn before
// a byte is written), and a departed client's call can be cut (callGuard).
// Used by one request at a time; only Close may come from another goroutine.
type trackedConn struct {
	net.Conn
	addr trackedAddr
	// peek looks at the socket without consuming; zero for connections
	// that are not sockets (in-memory test listeners): never checked.
	peek peeker
	// stats counts discards of the identity the connection belongs to; nil
	// in unit tests that build a bare trackedConn.
	stats *connStats
	// starts counts the requests begun on the connection (see RemoteAddr);
	// check is set for the first write of every request after the first.
	starts uint32
	check  bool
	// checkAt is the Mono clock reading the check uses, when the caller
	// has just read it (roundTripGuarded: one reading for the check and
	// both deadlines); 0: the check reads the clock.
	checkAt int64
	// lastRead is when the last read returned (deadline.Mono; 0: never): the
	// end of the last answer for a connection back in the pool.
	lastRead int64
	// canceled is set when a callGuard closed the connection because its
	// client went away.
	canceled atomic.Bool
	// tls is set when the connection carries TLS (the peek sees records).
	tls bool
	// probe is tlsLeftover's read buffer.
	probe [1]byte
	// rd and wd arm the read and write deadlines lazily: every request on
	// a pooled connection asks for nearly the same ones again.
	rd, wd deadline.Lazy
}

func newTrackedConn(c net.Conn, stats *connStats) *trackedConn {
	tc := &trackedConn{Conn: c, stats: stats}
	tc.addr = trackedAddr{Addr: c.LocalAddr(), conn: tc}
	tc.peek.init(c)
	return tc
}

// SetReadDeadline arms t for reads unless deadline.Lazy allows leaving it.
func (c *trackedConn) SetReadDeadline(t time.Time) error { return c.rd.Set(t, c.Conn.SetReadDeadline) }

// SetWriteDeadline arms t for writes unless deadline.Lazy allows leaving it.
func (c *trackedConn) SetWriteDeadline(t time.Time) error {
	return c.wd.Set(t, c.Conn.SetWriteDeadline)
}

// monoNow reads the Mono clock (roundTripGuarded, whose deadline variable
// hides the package).
func monoNow() int64 { return deadline.Mono() }

// setWriteDeadlineAt and setReadDeadlineAt are the deadline setters for a
// caller that has just read the Mono clock (now; see deadline.Lazy.SetAt).
func (c *trackedConn) setWriteDeadlineAt(t time.Time, now int64) error {
	return c.wd.SetAt(t, now, c.Conn.SetWriteDeadline)
}

func (c *trackedConn) setReadDeadlineAt(t time.Time, now int64) error {
	return c.rd.SetAt(t, now, c.Conn.SetReadDeadline)
}

// SetDeadline sets both.
func (c *trackedConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

// errStaleConn is returned by the first Write of a reused connection that
// must not carry a request; nothing was written.
var errStaleConn = errors.New("upstream: pooled connection closed by the peer, unsolicited bytes waiting, or idle too long")

// Write writes p; on a reused connection's first write of a request it
// first checks the connection (see stale) and refuses with errStaleConn,
// writing nothing, when it must be discarded.
func (c *trackedConn) Write(p []byte) (int, error) {
	if c.check {
		c.check = false
		now := c.checkAt
		c.checkAt = 0
		if now == 0 {
			now = deadline.Mono()
		}
		if r := c.stale(now); r != discardNone {
			c.stats.add(r)
			return 0, errStaleConn
		}
	}
	return c.Conn.Write(p)
}

// Read reads into p and notes when it returned.
func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.lastRead = deadline.Mono()
	return n, err
}

// stale reports why a pooled connection must not be reused, or discardNone.
// A peer closes an idle keep-alive connection on its own timer (uvicorn
// after 5 s): a request written as it does is lost, and counted as the
// target's failure, so a connection idle past maxIdleConnDuration is not
// trusted even when the peek finds it open. Bytes waiting on an idle
// connection are nobody's answer (a stray response, a close_notify):
// reading them as the next answer would hand one client another's.
func (c *trackedConn) stale(now int64) discardReason {
	if c.canceled.Load() {
		return discardClosed // closed under a departed client's call
	}
	if c.lastRead != 0 && time.Duration(now-c.lastRead) >= maxIdleConnDuration {
		return discardExpired
	}
	switch c.peek.state() {
	case peekData:
		if c.tls && closeNotify(c.peek.seen()) {
			return discardClosed
		}
		return discardUnsolicited
	case peekClosed:
		return discardClosed
	}
	return discardNone
}

// closeNotify reports whether b, the bytes waiting on an idle TLS
// connection, look like the close_notify alert a server sends before its
// FIN: one record that is an alert (TLS 1.2 shows the type, 21), or, as TLS
// 1.3 hides it, an application-data record (23) just the size of an
// encrypted two-byte alert (1 type byte + 2 + a 16-byte AEAD tag). Either
// way the connection is discarded; this only picks the metric's reason.
func closeNotify(b []byte) bool {
	if len(b) < 5 {
		return false
	}
	n := int(b[3])<<8 | int(b[4])
	switch b[0] {
	case 21:
		return len(b) == 5+n
	case 23:
		return n == 19 && len(b) == 5+n
	}
	return false
}

// discardReason says why a pooled connection was dropped before reuse
// (switchyard_upstream_conn_discards_total's reason label).
type discardReason uint8

const (
	discardNone discardReason = iota
	// discardClosed: the peer closed (FIN) or reset the connection.
	discardClosed
	// discardUnsolicited: bytes were waiting that no request asked for.
	discardUnsolicited
	// discardExpired: idle for maxIdleConnDuration or longer.
	discardExpired
	numDiscardReasons
)

// DiscardReasons are the label values of the discard counters, indexed as
// ConnDiscards' argument.
var DiscardReasons = [...]string{discardClosed: "closed", discardUnsolicited: "unsolicited", discardExpired: "expired"}

// connStats counts one identity's connection discards. Safe for
// concurrent use.
type connStats struct {
	discards [numDiscardReasons]atomic.Uint64
}

func (s *connStats) add(r discardReason) {
	if s != nil {
		s.discards[r].Add(1)
	}
}

// ConnDiscards returns how many pooled connections of t's identity were
// dropped before reuse for reason DiscardReasons[i] (i from 1), since the
// identity's state was created.
func (t *Target) ConnDiscards(i int) uint64 {
	if i <= int(discardNone) || i >= int(numDiscardReasons) {
		return 0
	}
	return t.state.conns.discards[i].Load()
}
