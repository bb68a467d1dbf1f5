package upstream

import (
	"errors"

	"github.com/valyala/fasthttp"
)

// connTransport is the RoundTripper of every HostClient: fasthttp's own,
// except that a request refused by a stale pooled connection (errStaleConn:
// nothing was written) goes out on the next connection, a fresh one if no
// other is idle. That is not a retry: the upstream never saw the request
// (net/http's "nothing written" rule), so the breaker hears nothing of it.
type connTransport struct{}

func (connTransport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	// Each stale connection is closed as it is refused, and a freshly
	// dialed one is never checked, so this ends after at most the pool's
	// idle connections plus one; the bound only guards that invariant.
	for i := 0; ; i++ {
		retry, err := fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
		if err == nil || i > hc.MaxConns || !errors.Is(err, errStaleConn) {
			return retry, err
		}
	}
}
