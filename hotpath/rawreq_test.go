package hotpath

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// parseRequest fills req as the server would from a POST to path with the
// given extra header lines ("Name: value\r\n" each; Host: localhost unless
// they hold a Host) and body, so the header section as received
// (RawHeaders) is there as in production.
func parseRequest(t testing.TB, req *fasthttp.Request, path, headers string, body []byte) error {
	t.Helper()
	var raw bytes.Buffer
	raw.WriteString("POST " + path + " HTTP/1.1\r\n")
	if !strings.Contains(headers, "Host:") {
		raw.WriteString("Host: localhost\r\n")
	}
	raw.WriteString("Content-Type: application/json\r\n")
	raw.WriteString(headers)
	raw.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	raw.Write(body)
	req.Reset()
	return req.Read(bufio.NewReader(&raw))
}

// loopbackConnStub is a net.Conn accepted on 127.0.0.1 that carries nothing:
// enough for a RequestCtx the handler serves without a server.
type loopbackConnStub struct{ net.Conn }

var stubLocal = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}

func (loopbackConnStub) LocalAddr() net.Addr              { return stubLocal }
func (loopbackConnStub) RemoteAddr() net.Addr             { return stubLocal }
func (loopbackConnStub) SetWriteDeadline(time.Time) error { return nil }
func (loopbackConnStub) SetReadDeadline(time.Time) error  { return nil }
func (loopbackConnStub) SetDeadline(time.Time) error      { return nil }
func (loopbackConnStub) Close() error                     { return nil }
func (loopbackConnStub) Write(b []byte) (int, error)      { return len(b), nil }
func (loopbackConnStub) Read([]byte) (int, error)         { return 0, net.ErrClosed }
