package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawRequest sends one request line (method and target as written) with
// key on a fresh TCP connection and returns the status and body.
func (e *batchEnv) rawRequest(t *testing.T, method, target, key string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", method, target, key)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBatchIDsInOddEncodings: an id written any way but its own plain
// token (percent-encoded, another case, with a trailing slash, a dot
// segment, a double slash, a path parameter, a NUL, fullwidth letters, in
// an absolute-form target) names nothing: 404, for another key and for the
// owner alike, and no upstream call. A query string on an id's path is
// not part of the id.
func TestBatchIDsInOddEncodings(t *testing.T) {
	e := newBatchEnv(t, batchOptions{})
	id := e.fileID(t, batchAcmeKey, chatLine("a", "gpt-4o"))
	if !strings.HasPrefix(id, "file-") {
		t.Fatalf("file id %q", id)
	}
	enc := "%" + fmt.Sprintf("%02X", id[0]) + id[1:]
	targets := []string{
		"/v1/files/" + enc, "/v1/files/" + strings.ToUpper(id), "/v1/files/" + id + "/", "/v1/files/./" + id,
		"/v1/files//" + id, "/v1/files/" + id + ";x=1", "/v1/files/" + id + "%00", "/v1/files/" + id + "%2f",
		"/v1/files/" + id + "/content/", "/v1/files/" + id + "/content;x", "/v1/files/" + id + "/%63ontent",
		"/v1/files/x/../" + id, "/v1//files/" + id, "/v1/files/\uff46ile" + id[4:],
		"http://localhost/v1/files/" + enc,
	}
	before := e.batchCalls()
	for _, key := range []string{batchGlobexKey, batchAcmeKey} {
		for _, target := range targets {
			if status, body := e.rawRequest(t, "GET", target, key); status != 404 && status != 400 {
				t.Errorf("GET %s = %d %s; want 404 (or 400 for a target HTTP refuses)", target, status, body)
			}
		}
	}
	if n := e.batchCalls() - before; n != 0 {
		t.Fatalf("%d upstream calls; want none", n)
	}
	// The owner's plain id with a query string: the file, read once.
	if status, body := e.rawRequest(t, "GET", "/v1/files/"+id+"?purpose=x&after=y", batchAcmeKey); status != 200 || !strings.Contains(body, id) {
		t.Fatalf("the owner's id with a query = %d %s", status, body)
	}
	if status, _ := e.rawRequest(t, "GET", "/v1/files/"+id+"?x=1", batchGlobexKey); status != 404 {
		t.Fatalf("another key's id with a query = %d; want 404", status)
	}
	if n := e.batchCalls() - before; n != 1 {
		t.Fatalf("%d upstream calls; want 1", n)
	}
}
