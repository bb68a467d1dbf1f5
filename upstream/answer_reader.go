package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"sync"

	"github.com/valyala/fasthttp"
)

// An upstream answer is read through HostClient's 4 KiB reader, which an
// open stream holds for its whole life (fasthttp's default, as the bare
// relay has). fasthttp cannot read a head larger than its reader, and
// provider heads can grow past 4 KiB (rate-limit counters, tracing, CDN
// cookies), so a head that fills the reader is read again through an
// 8 KiB one stacked on it: what nginx accepts of an upstream's head by
// default (proxy_buffer_size), the limit the walk had before.
const (
	answerBufferSize = 4 << 10
	maxResponseHead  = 8 << 10
)

// headReaderPool holds the readers stacked for heads over answerBufferSize.
var headReaderPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, maxResponseHead) }}

// answerReader is the reader of one upstream answer: br is what fasthttp
// reads it from; under is HostClient's reader beneath br when the head
// outgrew it (nil: br is HostClient's own). Owned by the call.
type answerReader struct {
	br, under *bufio.Reader
}

var httpVersionPrefix = []byte("HTTP/")

// readAnswer reads resp (its head, and a buffered body) from conn through
// hc's reader, stacking a larger one when the head does not fit it.
func readAnswer(hc *fasthttp.HostClient, conn net.Conn, resp *fasthttp.Response) (answerReader, error) {
	r := answerReader{br: hc.AcquireReader(conn)}
	err := resp.ReadLimitBody(r.br, hc.MaxResponseBodySize)
	if err != nil && headOutgrew(err, r.br) {
		// The head is unread, whole in r.br (fasthttp only peeks until the
		// head is complete), so a reader stacked on r.br reads it again
		// from its first byte.
		big := headReaderPool.Get().(*bufio.Reader)
		big.Reset(r.br)
		r.under, r.br = r.br, big
		err = resp.ReadLimitBody(r.br, hc.MaxResponseBodySize)
	}
	return r, err
}

// headOutgrew reports whether err is fasthttp's "small read buffer" for a
// head that filled br: br holds nothing consumed and starts with a status
// line (not so for a trailer, the only other section read that way).
func headOutgrew(err error, br *bufio.Reader) bool {
	var small *fasthttp.ErrSmallBuffer
	if !errors.As(err, &small) || br.Buffered() < br.Size() {
		return false
	}
	b, _ := br.Peek(len(httpVersionPrefix))
	return bytes.Equal(b, httpVersionPrefix)
}

// buffered is how many bytes of the connection the readers hold unread.
func (r answerReader) buffered() int {
	n := r.br.Buffered()
	if r.under != nil {
		n += r.under.Buffered()
	}
	return n
}

// release hands the readers back; r must not be used again.
func (r answerReader) release(hc *fasthttp.HostClient) {
	if r.under != nil {
		r.br.Reset(nil)
		headReaderPool.Put(r.br)
		hc.ReleaseReader(r.under)
		return
	}
	hc.ReleaseReader(r.br)
}
