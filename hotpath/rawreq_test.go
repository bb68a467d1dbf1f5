package hotpath

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"

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
