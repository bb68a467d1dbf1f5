package upstream

import (
	"bytes"
	"io"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/provider"
)

// Transfers: the calls of the batch APIs (docs/batches.md), a file upload
// or download, a batch created, read, cancelled or deleted. They go to the
// same target identities as requests (its address, TLS settings and
// credential) but through a client of their own: a 200 MiB upload must not
// be cut by the request client's per-request write timeout, and it must not
// hold one of the max_concurrency connections chat traffic is sized for.

// transferConns bounds the connections of one identity's transfer client.
const transferConns = 32

// newTransferClient builds an identity's transfer client: the request
// client's settings, but no write timeout of its own (each call passes a
// deadline sized to its body) and its own connection bound.
func (p *Pool) newTransferClient(u *url.URL, stats *connStats) *fasthttp.HostClient {
	hc := p.newHostClient(u, transferConns, stats)
	hc.WriteTimeout = 0
	return hc
}

// transferClient returns t's identity's transfer client, building it on
// first use.
func (t *Target) transferClient() *fasthttp.HostClient {
	st := t.state
	if c := st.transfer.Load(); c != nil {
		return c
	}
	st.transferMu.Lock()
	defer st.transferMu.Unlock()
	if c := st.transfer.Load(); c != nil {
		return c
	}
	c := st.newTransfer()
	st.transfer.Store(c)
	return c
}

// Transfer makes one batch API call to t: req carries the method, the path
// under t's base URL (path, with its query) and the body; Transfer sets the
// URI, t's credential (client: the client's request header, for the
// provider headers a client may choose, nil = none) and asks for an
// uncoded answer. The call, body sent and answer head read, must end by
// deadline. With resp.StreamBody the answer's body is left to read (see
// BodyReader). It returns ErrNoToken when t's access token could not be
// had, else the transport's error.
func (t *Target) Transfer(req *fasthttp.Request, resp *fasthttp.Response, path string, client *fasthttp.RequestHeader, deadline time.Time) error {
	req.URI().DisablePathNormalizing = true
	req.SetRequestURI(t.Endpoint.BaseURL + path)
	if err := provider.SetBatchCredential(req, t.Provider, &t.Endpoint, client); err != nil {
		return err
	}
	req.Header.SetCanonical(headerAcceptEncoding, identityCoding)
	return t.transferClient().DoDeadline(req, resp, deadline)
}

// Redact replaces every occurrence of t's credentials in b (see
// provider.Redact): b itself when none occurs. For bytes of t's answers
// headed to a client.
func (t *Target) Redact(b []byte) []byte { return t.redact(b) }

// BodyReader returns the body of resp, a streamed answer of Transfer, as a
// reader each of whose reads waits at most idle for the upstream's next
// bytes (the call's deadline bounded its head only). Close the response's
// body stream (Response.CloseBodyStream) when done.
func BodyReader(resp *fasthttp.Response, idle time.Duration) io.Reader {
	if resp.BodyStream() == nil {
		// fasthttp read the body whole (it was small): nothing to wait for.
		return bytes.NewReader(resp.Body())
	}
	return &idleReader{r: resp.BodyStream(), laddr: resp, idle: idle}
}

// idleReader re-arms its connection's read deadline before each read.
type idleReader struct {
	r     io.Reader
	laddr *fasthttp.Response
	idle  time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	if r.r == nil {
		return 0, io.EOF
	}
	setStreamDeadline(r.laddr.LocalAddr(), time.Now().Add(r.idle))
	return r.r.Read(p)
}

// RedactReader returns r with every occurrence of t's credentials
// replaced (see provider.RedactReader): for a stream of t's headed to a
// client whole, such as a file's content.
func (t *Target) RedactReader(r io.Reader) io.Reader { return provider.RedactReader(r, t.secretList()) }
