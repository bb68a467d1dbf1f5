package responsesws

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"

	"github.com/valyala/fasthttp"
)

// The bridge: each response.create reaches the gateway's own handler as an
// ordinary POST /v1/responses on a private in-process connection, one end
// of a Unix socketpair whose other end the same fasthttp.Server serves
// (Server.ServeConn). So routing, client keys, quotas, residency, the
// audit log, metrics, failover and client-cancel apply to it exactly as to
// HTTP; the cancel watch peeks at the server's end with MSG_PEEK, which a
// socketpair supports (net.Pipe does not). docs/design.md, Responses over
// WebSocket, gives the measured cost.

// exchange is one bridged request: its connection and the answer's head.
type exchange struct {
	conn net.Conn
	br   *bufio.Reader
	resp fasthttp.Response
	// wrote receives the request write's outcome; done is closed by
	// close, which ends the watch on gone.
	wrote chan error
	done  chan struct{}
}

// open sends req to srv on a fresh in-process connection and reads the
// answer's head; its body is read through ex.resp.BodyStream. The request
// is written while the answer is read, so an answer that comes before the
// body is read (a refusal) is never stuck behind it. When gone closes (the
// socket's client left) before close, the connection is closed: to the
// handler that is a client leaving, and the upstream call is canceled, as
// over HTTP. The caller must call close.
func open(srv *fasthttp.Server, req *fasthttp.Request, gone <-chan struct{}) (*exchange, error) {
	client, err := socketPair(srv)
	if err != nil {
		return nil, err
	}
	ex := &exchange{conn: client, wrote: make(chan error, 1), done: make(chan struct{})}
	go func() {
		select {
		case <-gone:
			client.Close()
		case <-ex.done:
		}
	}()
	go func() {
		bw := bufio.NewWriterSize(client, 32<<10)
		err := req.Write(bw)
		if err == nil {
			err = bw.Flush()
		}
		ex.wrote <- err
	}()
	ex.br = bufio.NewReaderSize(client, 32<<10)
	ex.resp.StreamBody = true
	if err := ex.resp.Read(ex.br); err != nil {
		ex.close()
		if werr := <-ex.wrote; werr != nil {
			err = werr
		}
		return nil, err
	}
	return ex, nil
}

// close ends the exchange: the connection is closed (an answer still
// streaming is canceled).
func (ex *exchange) close() {
	close(ex.done)
	ex.conn.Close()
	_ = ex.resp.CloseBodyStream()
}

// isStream reports whether the answer is a 200 event stream.
func (ex *exchange) isStream() bool {
	return ex.resp.StatusCode() == fasthttp.StatusOK &&
		bytes.HasPrefix(ex.resp.Header.ContentType(), []byte("text/event-stream"))
}

// body reads the whole answer body, at most limit bytes (more is an error).
func (ex *exchange) body(limit int) ([]byte, error) {
	r := ex.resp.BodyStream()
	if r == nil {
		return ex.resp.Body(), nil
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err == nil && len(b) > limit {
		err = errTooLong
	}
	return b, err
}

var errTooLong = errors.New("responsesws: the answer is longer than the socket's limit")

// sseReader reads the data of one server-sent event at a time.
type sseReader struct {
	r    *bufio.Reader
	data []byte
	line []byte
	max  int // the most bytes of data one event may have
}

// next returns the data of the next event (its data lines joined by "\n"),
// valid until the next call, or io.EOF at the stream's end. Event names,
// ids and comments are skipped: each event's data says its type.
func (s *sseReader) next() ([]byte, error) {
	s.data = s.data[:0]
	has := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && has {
				return s.data, nil
			}
			return nil, err
		}
		if len(line) == 0 {
			if has {
				return s.data, nil
			}
			continue
		}
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		v, _ = bytes.CutPrefix(v, []byte(" "))
		if has {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, v...)
		has = true
		if len(s.data) > s.max {
			return nil, errTooLong
		}
	}
}

// readLine returns the next line without its line end ("\n" or "\r\n").
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.line = append(s.line[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(s.line) > s.max {
				return nil, errTooLong
			}
			line, err = s.r.ReadSlice('\n')
			s.line = append(s.line, line...)
		}
		line = s.line
	}
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}
