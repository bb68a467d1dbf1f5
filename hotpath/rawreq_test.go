package hotpath

import (
	"bufio"
	"bytes"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"
)

// parseRequest fills req as the server would from a POST to path with the
// given extra header lines ("Name: value\r\n" each) and body, so the header
// section as received (RawHeaders) is there as in production.
func parseRequest(t testing.TB, req *fasthttp.Request, path, headers string, body []byte) error {
	t.Helper()
	var raw bytes.Buffer
	raw.WriteString("POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n")
	raw.WriteString(headers)
	raw.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	raw.Write(body)
	req.Reset()
	return req.Read(bufio.NewReader(&raw))
}
