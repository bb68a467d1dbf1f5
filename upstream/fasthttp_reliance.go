package upstream

// What the upstream side relies on inside fasthttp, kept in this one file
// and each pinned by a test in fasthttp_reliance_test.go, so that a fasthttp
// upgrade that changes it fails a test instead of silently switching off a
// safety check:
//
//   - A Response records its connection's LocalAddr (Response.LocalAddr):
//     trackedConn answers with a trackedAddr that leads back to itself, so a
//     streamed answer's connection is found again (trackedOf,
//     setStreamDeadline). tls.Conn forwards LocalAddr, so https works too.
//   - fasthttp calls RemoteAddr once per request sent on a connection
//     (Response.ParseNetConn, right after taking it from the pool): the
//     second call marks a reused connection, checked before its next write.
//   - HostClient.ReleaseConn and CloseConn take fasthttp's unexported
//     *clientConn: giveBack reaches it through type inference.
//   - connTransport re-implements HostClient's round trip (AcquireConn,
//     AcquireWriter, req.Write, readAnswer) to bind a call's connection to
//     its client watch and to skip a stale pooled connection.

import (
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// connTransport is the RoundTripper of every HostClient: fasthttp's own,
// with two changes.
//
// A request refused by a stale pooled connection (errStaleConn: nothing
// was written) goes out on the next connection, a fresh one if no other is
// idle. That is not a retry: the upstream never saw the request (net/http's
// "nothing written" rule), so the breaker hears nothing of it.
//
// A call made by the walk carries its callGuard as a user value; it is sent
// by roundTripGuarded, which binds the connection it takes to the guard
// before the request is written, so that a departed client's call can be
// cut at any time: while the answer's headers are awaited, and for a stream
// until its body is closed (callGuard.closeStream).
type connTransport struct{}

// guardKey is the Request user value key of the walk's callGuard.
type guardKeyType struct{}

var guardKey any = guardKeyType{}

func (connTransport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	g, _ := req.UserValue(guardKey).(*callGuard)
	// Each stale connection is closed as it is refused, and a freshly
	// dialed one is never checked, so this ends after at most the pool's
	// idle connections plus one; the bound only guards that invariant.
	for i := 0; ; i++ {
		var retry bool
		var err error
		if g != nil {
			retry, err = roundTripGuarded(hc, req, resp, g)
		} else {
			retry, err = fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
		}
		// A departed client's guard aborts every connection bound to it,
		// which then reads as stale: going on would close the target's
		// idle connections one by one, and dial a fresh one to abort.
		if err == nil || i > hc.MaxConns || !errors.Is(err, errStaleConn) || g != nil && g.Gone() {
			return retry, err
		}
	}
}

// roundTripGuarded is fasthttp's transport (the same steps through
// HostClient's exported connection API), with the connection bound to g
// while the request is written and the answer read. A streamed answer's
// connection stays bound and held by g (holdStream) once its headers are
// read. g.deadline is the call's deadline and g.begun when the call began,
// a few microseconds ago: the connection wait, and the write deadline on a
// pooled connection, are counted from it rather than from two more clock
// reads.
func roundTripGuarded(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response, g *callGuard) (bool, error) {
	deadline, begun := g.deadline, g.begun
	if begun.IsZero() {
		begun = time.Now() // a guard armed by hand (tests)
	}
	// The walk calls HostClient.Do, not DoDeadline: this is where the
	// call's deadline applies (DoDeadline's own check, and three more clock
	// reads to carry the same deadline in req).
	if !begun.Before(deadline) {
		return false, fasthttp.ErrTimeout
	}
	cc, err := hc.AcquireConn(deadline.Sub(begun), req.ConnectionClose())
	if err != nil {
		return false, err
	}
	conn := cc.Conn()
	tc := trackedOf(conn)
	g.bind(tc)
	resp.ParseNetConn(conn)

	writeDeadline := deadline
	if hc.WriteTimeout > 0 {
		if tc == nil || tc.starts == 1 {
			// Freshly dialed (ParseNetConn counted its first request): the
			// connect may have taken a while, and the write gets its whole
			// WriteTimeout from now.
			begun = time.Now()
		}
		if d := begun.Add(hc.WriteTimeout); d.Before(writeDeadline) {
			writeDeadline = d
		}
	}
	// One clock reading serves the stale check of a pooled connection's
	// first write and both deadlines' deadline.Lazy checks (three reads
	// otherwise); a TLS connection sets its deadlines through tls.Conn.
	plain := tc != nil && conn == net.Conn(tc)
	var now int64
	if plain {
		now = monoNow()
		tc.checkAt = now
		err = tc.setWriteDeadlineAt(writeDeadline, now)
	} else {
		err = conn.SetWriteDeadline(writeDeadline)
	}
	if err != nil {
		g.unbind(tc)
		hc.CloseConn(cc)
		return true, err
	}
	bw := hc.AcquireWriter(conn)
	err = req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	if plain {
		tc.checkAt = 0
	}
	if x, ok := err.(interface{ Timeout() bool }); ok && x.Timeout() {
		err = fasthttp.ErrTimeout
	}
	if err != nil {
		g.unbind(tc)
		hc.CloseConn(cc)
		return true, err
	}
	if plain {
		err = tc.setReadDeadlineAt(deadline, now)
	} else {
		err = conn.SetReadDeadline(deadline)
	}
	if err != nil {
		g.unbind(tc)
		hc.CloseConn(cc)
		return true, err
	}
	if req.Header.IsHead() {
		resp.SkipBody = true
	}
	if hc.DisableHeaderNamesNormalizing {
		resp.Header.DisableNormalizing()
	}
	rd, err := readAnswer(hc, conn, resp)
	if err != nil {
		g.unbind(tc)
		rd.release(hc)
		hc.CloseConn(cc)
		return err != fasthttp.ErrBodyTooLarge, err
	}
	if resp.StreamBody && resp.BodyStream() != nil {
		// The body stream reads rd: both, and the connection, are the
		// walk's until it closes the stream.
		g.holdStream(hc, cc, rd, tc, req, resp)
		return false, nil
	}
	kept := g.unbind(tc) // false: the watcher closed it
	// After a 101 the connection no longer speaks HTTP/1.1 (fasthttp reads
	// it as a final answer without a body): whatever the upstream sends on
	// it next, A's real answer say, would be the next request's answer.
	switched := resp.StatusCode() == fasthttp.StatusSwitchingProtocols
	putConn(hc, cc, rd, tc, kept && !switched && !req.ConnectionClose() && !resp.ConnectionClose())
	return false, nil
}

// pastDeadline makes a read return at once when nothing is buffered.
var pastDeadline = time.Unix(1, 0)

// tlsLeftover reports why a TLS connection must not go back to the pool
// after an answer, or discardNone. crypto/tls reads every record the socket
// holds, so a stray response sent right behind the real one sits inside the
// tls.Conn, where the socket peek before reuse cannot see it, and would be
// read as the next request's answer: one client would get another's. A read
// that must not wait finds it (a record already pulled in is decrypted
// without touching the socket); a plain connection keeps nothing between
// answers but its reader's buffer, which putConn checks. tc lends the
// one-byte buffer.
func tlsLeftover(conn net.Conn, tc *trackedConn) discardReason {
	c, ok := conn.(*tls.Conn)
	if !ok || tc == nil {
		return discardNone
	}
	if c.SetReadDeadline(pastDeadline) != nil {
		return discardClosed
	}
	n, err := c.Read(tc.probe[:])
	// No deadline for whoever takes the connection next (it sets its own).
	if c.SetReadDeadline(time.Time{}) != nil {
		return discardClosed
	}
	if n > 0 {
		return discardUnsolicited
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return discardNone
	}
	return discardClosed // close_notify, EOF or a broken record
}

type trackedAddr struct {
	net.Addr
	conn *trackedConn
}

// LocalAddr returns an address that leads back to the connection.
func (c *trackedConn) LocalAddr() net.Addr { return &c.addr }

// RemoteAddr returns the peer's address. fasthttp calls it once at the start
// of every request it sends on the connection (Response.ParseNetConn, right
// after taking the connection from its pool), and nowhere else: from the
// second call on, the connection is a reused one, and the next Write (the
// request's first bytes) checks it first.
func (c *trackedConn) RemoteAddr() net.Addr {
	c.starts++
	if c.starts > 1 {
		c.check = true
	}
	return c.Conn.RemoteAddr()
}

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

// trackedOf returns the trackedConn behind a connection fasthttp handed out
// (the trackedConn itself, or a tls.Conn around it), or nil.
func trackedOf(c net.Conn) *trackedConn {
	if c == nil {
		return nil
	}
	if a, ok := c.LocalAddr().(*trackedAddr); ok {
		return a.conn
	}
	return nil
}

// heldConn is fasthttp's connection handle, the *clientConn that
// HostClient.AcquireConn returns: its type is unexported, so a held one is
// kept in an interface value (a pointer: no allocation).
type heldConn interface{ Conn() net.Conn }

// giveBack hands cc to op, HostClient.ReleaseConn or CloseConn, as the
// unexported type op takes, which the compiler infers from op.
func giveBack[C heldConn](op func(*fasthttp.HostClient, C), hc *fasthttp.HostClient, cc heldConn) {
	op(hc, cc.(C))
}
