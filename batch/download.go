package batch

import (
	"bytes"
	"io"
	"net"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/upstream"
)

// Downloads: a file's content (GET /v1/files/{id}/content) and a message
// batch's results (GET /v1/messages/batches/{id}/results) are streamed
// from the target to the client as they come, never held whole. While a
// message batch's results pass, the usage of each succeeded request is
// added up; when they have passed whole, the batch is charged (once).

// maxResultLine is the longest results line whose usage is read; a longer
// one passes through uncounted.
const maxResultLine = 4 << 20

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
		r.usage = &resultUsage{}
		r.done = func(whole bool) {
			if whole && r.usage.sum.Known {
				c.settle(t, o, &r.usage.sum, c.spend(t, o.Models, &r.usage.sum), true)
			} else if whole {
				c.settle(t, o, nil, 0, false)
			}
		}
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
	resp  *fasthttp.Response
	r     io.Reader
	conn  net.Conn
	eof   bool
	usage *resultUsage
	// done, when set, hears whether the whole body reached the client.
	done func(whole bool)
}

func (r *relay) Read(p []byte) (int, error) {
	if r.conn != nil {
		r.conn.SetWriteDeadline(time.Now().Add(hotpath.ResponseWriteTimeout)) //nolint:errcheck // the write reports it
	}
	n, err := r.r.Read(p)
	if r.usage != nil && n > 0 {
		r.usage.feed(p[:n])
	}
	if err == io.EOF {
		r.eof = true
	}
	return n, err
}

// CloseWithError implements fasthttp.ReadCloserWithError: err is the
// write's outcome (nil: the client has it all).
func (r *relay) CloseWithError(err error) error {
	whole := r.eof && err == nil
	if whole && r.usage != nil {
		r.usage.end()
	}
	r.resp.CloseBodyStream() //nolint:errcheck // the upstream answer is done with
	fasthttp.ReleaseResponse(r.resp)
	if r.done != nil {
		r.done(whole)
	}
	return nil
}

// resultUsage adds up the usage of a message batch's results as they
// pass: one JSON object a line.
type resultUsage struct {
	line []byte
	skip bool // the current line is too long to read
	// sum adds up the succeeded results' usage.
	sum quota.Usage
	p   fastjson.Parser
}

func (u *resultUsage) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			u.add(b)
			return
		}
		u.add(b[:i])
		u.end()
		b = b[i+1:]
	}
}

func (u *resultUsage) add(b []byte) {
	if u.skip {
		return
	}
	if len(u.line)+len(b) > maxResultLine {
		u.skip, u.line = true, u.line[:0]
		return
	}
	u.line = append(u.line, b...)
}

// end reads the line collected so far.
func (u *resultUsage) end() {
	defer func() { u.line, u.skip = u.line[:0], false }()
	if u.skip || len(bytes.TrimSpace(u.line)) == 0 {
		return
	}
	v, err := u.p.ParseBytes(u.line)
	if err != nil || str(v, "result", "type") != "succeeded" {
		return
	}
	us := v.Get("result", "message", "usage")
	if us == nil || us.Type() != fastjson.TypeObject {
		return
	}
	one, ok := usageOf(us)
	if !ok {
		return
	}
	u.sum.Input += one.Input
	u.sum.CacheRead += one.CacheRead
	u.sum.CacheWrite += one.CacheWrite
	u.sum.Output += one.Output
	u.sum.Known = true
}
