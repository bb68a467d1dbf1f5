//go:build !unix

package responsesws

import (
	"errors"
	"net"

	"github.com/valyala/fasthttp"
)

// errNoBridge: the platform has no socketpair.
var errNoBridge = errors.New("responsesws: no in-process connection on this platform")

func socketPair(*fasthttp.Server) (net.Conn, error) { return nil, errNoBridge }
