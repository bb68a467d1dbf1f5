package batch

import (
	"io"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/upstream"
)

// Downloads: a file's content (GET /v1/files/{id}/content) and a message
// batch's results (GET /v1/messages/batches/{id}/results) are streamed
// from the target to the client as they come, never held whole. Results
// the target answers are a sighting of the batch's end: its reservation
// is given back and its usage metered (meter.go), whatever the client
// reads of them.

// download serves a file's content or a message batch's results.
func (c *call) download(k *kind) {
	suffix := "/content"
	c.op = "content"
	if k.messages {
		suffix, c.op = "/results", "results"
	}
	t, o, ok := c.owned(k)
	if !ok {
		return
	}
	resp := fasthttp.AcquireResponse()
	x := &exchange{method: fasthttp.MethodGet, path: func(*upstream.Target) string { return objectPath(k, o.ID, suffix) }, stream: true}
	if k.messages {
		x.client = &c.rc.Request.Header
	}
	if c.walk([]*upstream.Target{t}, x, resp) == nil {
		fasthttp.ReleaseResponse(resp)
		c.gone(k, o.ID)
		return
	}
	// Redacted like every other answer of t's (its credential never
	// reaches a client, even quoted by the upstream in a file); the
	// length then changes with each occurrence, so none is declared.
	body := upstream.BodyReader(resp, t.Timeout)
	length := resp.Header.ContentLength()
	if red := t.RedactReader(body); red != body {
		body, length = red, -1
	}
	r := &relay{resp: resp, r: body, conn: c.rc.Conn()}
	if k.messages {
		c.settle(t, o, nil, 0, false)
		c.meterResults(t, o)
	}
	c.rc.SetStatusCode(resp.StatusCode())
	if ct := resp.Header.ContentType(); len(ct) > 0 {
		c.rc.Response.Header.SetContentTypeBytes(ct)
	}
	if cd := resp.Header.Peek("Content-Disposition"); len(cd) > 0 {
		c.rc.Response.Header.SetBytesV("Content-Disposition", t.Redact(cd))
	}
	c.rc.SetBodyStream(r, length)
	c.class = upstream.ClassOK
}

// relay is a download's body as the server writes it to the client: each
// read waits at most the target's timeout for the upstream and re-arms
// the client's write deadline, so a long download is bounded by its
// stalls, not its length. The server closes it when the answer is written
// or failed: the upstream answer is released then.
type relay struct {
	resp *fasthttp.Response
	r    io.Reader
	conn net.Conn
}

func (r *relay) Read(p []byte) (int, error) {
	if r.conn != nil {
		r.conn.SetWriteDeadline(time.Now().Add(hotpath.ResponseWriteTimeout)) //nolint:errcheck // the write reports it
	}
	return r.r.Read(p)
}

// CloseWithError implements fasthttp.ReadCloserWithError: err is the
// write's outcome (nil: the client has it all).
func (r *relay) CloseWithError(error) error {
	r.resp.CloseBodyStream() //nolint:errcheck // the upstream answer is done with
	fasthttp.ReleaseResponse(r.resp)
	return nil
}
