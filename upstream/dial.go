package upstream

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// Connecting to an upstream without growing the caller's stack.
//
// fasthttp dials on the goroutine of the request that needs a connection:
// the client connection's goroutine, which then relays a committed stream
// for the stream's whole life. net.Dialer's resolve-and-connect chain is
// the deepest a request meets (~4 KiB under the walk's frames), so it took
// that goroutine's stack over 8 KiB and the runtime doubled it to 16 KiB.
// The runtime halves a stack only at a garbage collection and only when
// under a quarter of it is in use, which a stream parked in its upstream
// read is not, and a stream allocates nothing per event, so collections are
// rare: every stream that opened a connection kept 16 KiB of stack (bench/
// HISTORY.md: 1,000 streams, 47-49 KiB of RSS per stream, 37-39 with the
// connect below). So an IP address is connected with a non-blocking
// connect awaited through the runtime poller (dialShallow, on Linux), a
// few hundred bytes deep; a host name is resolved and connected on a
// goroutine of its own (dialAside), and so is a TLS connection, handshake
// included (connectTLS). A goroutine aside costs a start and a channel per
// new connection, and its stack stays with the dead goroutine until the
// next collection, so ~1,000 dials at once still hold ~8 MiB for a while;
// a grown connection goroutine would hold it for the stream's life.

// dialTCP connects to addr for a HostClient, within timeout.
func dialTCP(addr string, timeout time.Duration) (net.Conn, error) {
	if c, err := dialShallow(addr, timeout); err != errNotLiteral {
		return c, err
	}
	return dialAside(addr, timeout)
}

// dialAside runs fasthttp's dual-stack dial (resolve, then connect) on a
// goroutine of its own.
func dialAside(addr string, timeout time.Duration) (net.Conn, error) {
	return runAside(func() (net.Conn, error) { return fasthttp.DialDualStackTimeout(addr, timeout) })
}

// connectTLS runs connect and a TLS handshake over its connection on a
// goroutine of its own, and returns the *tls.Conn: fasthttp takes a
// connection with a Handshake method as TLS already and does not
// handshake again. Like fasthttp's own handshake (tlsClientHandshake) it
// uses hc's TLSConfig (newHostClient sets its ServerName), is bounded by
// hc.WriteTimeout from before the connect when that is set, and reports
// fasthttp.ErrTLSHandshakeTimeout when that cuts it.
func connectTLS(hc *fasthttp.HostClient, connect func() (net.Conn, error)) (net.Conn, error) {
	return runAside(func() (net.Conn, error) {
		var deadline time.Time
		if hc.WriteTimeout > 0 {
			deadline = time.Now().Add(hc.WriteTimeout)
		}
		c, err := connect()
		if err != nil {
			return nil, err
		}
		tc := tls.Client(c, hc.TLSConfig)
		if err := tc.SetDeadline(deadline); err != nil {
			c.Close() //nolint:errcheck // failed already
			return nil, err
		}
		if err := tc.Handshake(); err != nil {
			c.Close() //nolint:errcheck // failed already
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return nil, fasthttp.ErrTLSHandshakeTimeout
			}
			return nil, err
		}
		if err := tc.SetDeadline(time.Time{}); err != nil {
			c.Close() //nolint:errcheck // failed already
			return nil, err
		}
		return tc, nil
	})
}

// runAside runs f on a goroutine of its own and waits for it. A panic in f
// (a test's Dial) is raised again on the caller's goroutine, where the
// handler's recovery sees it, as if f had run there.
func runAside(f func() (net.Conn, error)) (net.Conn, error) {
	type result struct {
		c     net.Conn
		err   error
		panic any
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			r.panic = recover()
			ch <- r
		}()
		r.c, r.err = f()
	}()
	r := <-ch
	if r.panic != nil {
		panic(r.panic)
	}
	return r.c, r.err
}
