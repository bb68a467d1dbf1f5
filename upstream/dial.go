package upstream

import (
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
// goroutine of its own (dialAside).

// dialTCP connects to addr for a HostClient, within timeout.
func dialTCP(addr string, timeout time.Duration) (net.Conn, error) {
	if c, err := dialShallow(addr, timeout); err != errNotLiteral {
		return c, err
	}
	return dialAside(addr, timeout)
}

// dialAside runs fasthttp's dual-stack dial (resolve, then connect) on a
// goroutine of its own and waits for it. The price, only when a new
// connection is made: a goroutine start and a channel.
func dialAside(addr string, timeout time.Duration) (net.Conn, error) {
	type dialed struct {
		c   net.Conn
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		c, err := fasthttp.DialDualStackTimeout(addr, timeout)
		ch <- dialed{c, err}
	}()
	d := <-ch
	return d.c, d.err
}
