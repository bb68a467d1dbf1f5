package upstream

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// Connecting to an upstream without growing the caller's stack: every
// connect runs on a goroutine of its own (runAside) while the caller waits
// on a channel, so a stream's connection goroutine keeps an 8 KiB stack.
// An IP address is connected by a non-blocking connect awaited through the
// runtime poller (dialShallow, on Linux), a few hundred bytes deep, so the
// goroutine aside stays small too; a host name is resolved and connected
// by fasthttp's dual-stack dialer. See docs/design.md.

// dialTCP connects to addr for a HostClient, within timeout.
func dialTCP(addr string, timeout time.Duration) (net.Conn, error) {
	return runAside(func() (net.Conn, error) {
		if c, err := dialShallow(addr, timeout); err != errNotLiteral {
			return c, err
		}
		return fasthttp.DialDualStackTimeout(addr, timeout)
	})
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
