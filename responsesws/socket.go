package responsesws

import (
	"errors"
	"io"
	"net"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"
)

// writeTimeout bounds writing one message to the client: one that stops
// reading cannot hold a socket, a bridged answer and its upstream call for
// ever (the HTTP path bounds each event of a stream the same way).
const writeTimeout = 60 * time.Second

// closeGrace bounds writing a close frame.
const closeGrace = time.Second

var errShuttingDown = errors.New("the gateway is shutting down; reconnect")

// socket is one client's WebSocket. Two goroutines serve it: the reader
// (readLoop), which only reads messages and hands them over one at a time,
// and the worker (serve), which answers them in order and alone writes.
// A response.create sent while another runs waits its turn; one message
// waits, and the reader reads no further until the worker takes it.
type socket struct {
	srv *Server
	key string // the client key's name, for the log
	id  []byte // the upgrade's X-Request-Id
	// hdr holds the upgrade's headers every bridged request carries.
	hdr []header
	// conn is set by serve; raw is the connection under it.
	conn *websocket.Conn
	raw  net.Conn

	// inbox carries the reader's messages to the worker; gone is closed
	// when a read fails (the client left or closed the socket); quit is
	// closed when the worker is done, which releases the reader.
	inbox chan inbound
	gone  chan struct{}
	quit  chan struct{}

	mem memory
	// Buffers reused from one response to the next.
	input, output, body, spare []byte
	started                    time.Time
	responses                  int
	closeOnce                  sync.Once
	// broken is set (by the worker) when a write failed: part of a message
	// may be on the wire, and every later write fails too, so the socket
	// can carry nothing more and is closed.
	broken bool
}

// header is one header name and value, copied from the upgrade request.
type header struct{ name, value string }

// inbound is one message as the reader got it: data, or a refusal when it
// could not be taken (too large: the socket closes after answering it).
type inbound struct {
	data     []byte
	tooLarge bool
	binary   bool
}

// forwarded are the upgrade's headers each bridged request carries: the
// client key, the routing metadata, the trace context, and Origin (so a
// reload that drops an allowed origin applies to open sockets too).
var forwarded = [...]string{fasthttp.HeaderAuthorization, "X-Api-Key", "X-Gateway-Metadata", "Traceparent", "Tracestate", fasthttp.HeaderOrigin}

func newSocket(srv *Server, rc *fasthttp.RequestCtx, key string) *socket {
	sk := &socket{
		srv:   srv,
		key:   key,
		id:    append([]byte(nil), rc.Response.Header.Peek("X-Request-Id")...),
		inbox: make(chan inbound, 1),
		gone:  make(chan struct{}),
		quit:  make(chan struct{}),
	}
	// The screen has held the Host against the listener; an HTTP/1.0
	// upgrade may have none, and a request cannot be written without one.
	host := string(rc.Request.Header.Host())
	if host == "" {
		host = "localhost"
	}
	sk.hdr = append(sk.hdr, header{fasthttp.HeaderHost, host})
	for _, name := range forwarded {
		if v := rc.Request.Header.Peek(name); v != nil {
			sk.hdr = append(sk.hdr, header{name, string(v)})
		}
	}
	return sk
}

// attach makes c the socket's connection.
func (sk *socket) attach(c *websocket.Conn) {
	sk.conn = c
	sk.raw = unwrap(c)
}

// unwrap returns the connection under c. fasthttp's hijacked connection
// does not close on Close: the socket must close it itself before it
// returns, so that its reader is done with it.
func unwrap(c *websocket.Conn) net.Conn {
	raw := c.NetConn()
	if u, ok := raw.(interface{ UnsafeConn() net.Conn }); ok {
		return u.UnsafeConn()
	}
	return raw
}

// serve runs the attached socket until either side closes it; it returns
// once both goroutines are done with the connection.
func (sk *socket) serve() {
	sk.started = time.Now()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		sk.readLoop()
	}()
	code, why := sk.work()
	close(sk.quit)
	sk.closeWith(code, why)
	<-readerDone
	sk.srv.log.Info().Bytes("request_id", sk.id).Str("key", sk.key).Int("responses", sk.responses).
		Dur("open", time.Since(sk.started)).Str("close", why).Msg("responses socket closed")
}

// readLoop reads the client's messages into inbox until a read fails (then
// it closes gone), a message is too large, or the worker is done. Each
// message is held to max_message_bytes of the configuration current when
// it begins.
func (sk *socket) readLoop() {
	defer sk.recoverPanic()
	for {
		typ, r, err := sk.conn.NextReader()
		if err != nil {
			close(sk.gone)
			return
		}
		limit := sk.srv.limits().MaxMessageBytes
		data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
		in := inbound{data: data, binary: typ != websocket.TextMessage}
		switch {
		case err != nil:
			close(sk.gone)
			return
		case len(data) > limit:
			// Reading on would take unbounded bytes; the worker answers
			// and closes the socket (1009).
			in = inbound{tooLarge: true}
		}
		if !sk.handOver(in) {
			return
		}
		if in.tooLarge {
			return
		}
	}
}

// hangupEvery is how often a reader holding a message that waits its turn
// checks that the client is still there.
const hangupEvery = 250 * time.Millisecond

// handOver gives in to the worker, waiting while it answers the messages
// before. Meanwhile the socket reads nothing, so a client that leaves would
// go unnoticed and the response in flight would run on, billed, for nobody
// (over HTTP it is canceled within a second): the connection is checked
// for a hang-up, which closes gone. It reports false when the reader is
// done: the worker quit, or the client left.
func (sk *socket) handOver(in inbound) bool {
	select {
	case sk.inbox <- in:
		return true
	case <-sk.quit:
		return false
	default:
	}
	tick := time.NewTicker(hangupEvery)
	defer tick.Stop()
	for {
		select {
		case sk.inbox <- in:
			return true
		case <-sk.quit:
			return false
		case <-tick.C:
			if hungUp(sk.raw) {
				close(sk.gone)
				return false
			}
		}
	}
}

// work answers the reader's messages in order until the socket should
// close, and returns the close code and reason.
func (sk *socket) work() (code int, why string) {
	defer func() {
		if v := recover(); v != nil {
			sk.srv.log.Error().Str("panic", stringOf(v)).Bytes("stack", debug.Stack()).
				Msg("BUG: a responses socket panicked; closing it")
			code, why = websocket.CloseInternalServerErr, "internal error"
		}
	}()
	idle := time.NewTimer(sk.srv.limits().IdleTimeout)
	defer idle.Stop()
	for {
		// A shutdown wins over a waiting message: the response that is
		// running has finished; the next one is not started.
		select {
		case <-sk.srv.closing:
			return websocket.CloseGoingAway, "the gateway is shutting down"
		default:
		}
		select {
		case <-sk.srv.closing:
			return websocket.CloseGoingAway, "the gateway is shutting down"
		case <-sk.gone:
			return websocket.CloseNormalClosure, "client closed"
		case <-idle.C:
			return websocket.CloseNormalClosure, "idle timeout"
		case in := <-sk.inbox:
			if stop := sk.handle(in); stop != 0 {
				return stop, "message too large"
			}
			if sk.broken {
				return websocket.CloseGoingAway, "write to the client failed"
			}
		}
		idle.Reset(sk.srv.limits().IdleTimeout)
	}
}

// handle answers one message; a non-zero result closes the socket with
// that code.
func (sk *socket) handle(in inbound) int {
	switch {
	case in.tooLarge:
		limit := sk.srv.limits().MaxMessageBytes
		sk.refuse(&refusal{status: 413, typ: "invalid_request_error", code: "request_too_large",
			message: "message is too large; at most " + strconv.Itoa(limit) + " bytes allowed (server.websocket.max_message_bytes)"})
		return websocket.CloseMessageTooBig
	case in.binary:
		sk.refuse(badMessage("binary messages are not accepted; send JSON text"))
		return 0
	}
	k, c, bad := parseMessage(in.data)
	switch {
	case bad != nil:
		sk.refuse(bad)
	case k == kindCreate:
		sk.create(&c)
	}
	return 0
}

// refuse writes r's error event.
func (sk *socket) refuse(r *refusal) {
	sk.body = appendError(sk.body[:0], r, nil)
	sk.write(sk.body) //nolint:errcheck // a client that left is seen by the reader
}

// write sends one text message. A failure (the client stopped reading for
// the server's write timeout, or left) marks the socket broken.
func (sk *socket) write(msg []byte) error {
	_ = sk.conn.SetWriteDeadline(time.Now().Add(sk.srv.writeTimeout))
	err := sk.conn.WriteMessage(websocket.TextMessage, msg)
	if err != nil {
		sk.broken = true
	}
	return err
}

// closeWith sends a close frame with code and reason and closes the
// connection, which ends the reader.
func (sk *socket) closeWith(code int, why string) {
	sk.closeOnce.Do(func() {
		_ = sk.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, why), time.Now().Add(closeGrace))
		sk.raw.Close()
	})
}

// abort closes the connection at once (Shutdown's timeout): the reader
// stops, and with it a response in flight.
func (sk *socket) abort() {
	if sk.raw != nil {
		sk.raw.Close()
	}
}

// closeNow closes a socket that will not be served.
func closeNow(c *websocket.Conn, code int, why string) {
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, why), time.Now().Add(closeGrace))
	unwrap(c).Close()
}

func (sk *socket) recoverPanic() {
	if v := recover(); v != nil {
		sk.srv.log.Error().Str("panic", stringOf(v)).Bytes("stack", debug.Stack()).
			Msg("BUG: a responses socket's reader panicked; closing it")
	}
}

func stringOf(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "panic"
}
