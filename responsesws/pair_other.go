//go:build !unix

package responsesws

import (
	"net"

	"github.com/valyala/fasthttp"
)

func socketPair(*fasthttp.Server) (net.Conn, error) { return nil, errNoBridge }
