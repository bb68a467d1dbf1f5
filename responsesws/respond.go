package responsesws

import (
	"bufio"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/provider"
)

// create answers one response.create: from the socket's memory when it is
// a warm-up, else through the bridge as a POST /v1/responses whose events
// are relayed one message each.
func (sk *socket) create(c *create) {
	limit := bound(sk.srv.limits())
	st := sk.mem.continuation(c)
	if st == memDropped {
		sk.refuse(&refusal{status: 400, typ: "invalid_request_error", code: "previous_response_not_supported",
			message: "previous_response_id " + strconv.Quote(c.previous) + " names a response this socket no longer holds: " +
				"its input and output passed the socket's memory (4 x server.websocket.max_message_bytes, at most server.max_request_bytes); " +
				"send the whole input without previous_response_id"})
		return
	}
	expand := st == memHeld
	// The response's whole input: the last response's items, then the new.
	sk.spare = c.inputItems(sk.spare[:0])
	sk.input = sk.input[:0]
	if expand {
		sk.input = append(sk.input, sk.mem.items...)
	}
	sk.input = appendItems(sk.input, sk.spare)
	// Whether this response's whole context is known here: not when its
	// request names a response the member stores (sent as is).
	whole := expand || !c.hasPrevious
	if !c.generate {
		sk.warmup(c, whole, limit)
		return
	}
	sk.body = c.body(sk.body[:0], expand, sk.input)
	sk.bridge(whole, limit)
}

// appendItems appends items (comma-separated JSON values) to dst, a list
// of the same form.
func appendItems(dst, items []byte) []byte {
	if len(items) == 0 {
		return dst
	}
	if len(dst) > 0 {
		dst = append(dst, ',')
	}
	return append(dst, items...)
}

// warmup answers generate: false without an upstream call: response.created
// and response.completed with no output. The response becomes the socket's
// last, its input remembered, so the next turn can continue from it.
func (sk *socket) warmup(c *create, whole bool, limit int) {
	if _, ok := stringText(c.model); !ok {
		sk.refuse(badMessage(`request has no "model"; it must name the model as a string`))
		return
	}
	id := newResponseID()
	var created, completed []byte
	created, completed = appendWarmup(sk.body[:0], completed, id, c.model, time.Now())
	sk.body = created
	if sk.write(created) != nil || sk.write(completed) != nil {
		return
	}
	sk.output = sk.output[:0]
	sk.settle(id, "response.completed", whole, false, limit)
}

// settle records how the response id ended (terminal: its last event's
// type) as the socket's last: its items (sk.input, then sk.output) are
// remembered when it completed and its whole context is known.
func (sk *socket) settle(id, terminal string, whole, over bool, limit int) {
	switch {
	case terminal != "response.completed" && terminal != "response.incomplete":
		sk.mem.forget(id)
	case !whole:
		sk.mem.chained(id)
	default:
		old := sk.mem.items
		sk.mem.remember(id, appendItems(sk.input, sk.output), over, limit)
		sk.input = old[:0]
	}
}

// bridge sends sk.body to the gateway's handler and relays its answer.
func (sk *socket) bridge(whole bool, limit int) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI("/v1/responses")
	for _, h := range sk.hdr {
		if h.name == fasthttp.HeaderHost {
			req.Header.SetHost(h.value)
			continue
		}
		req.Header.Set(h.name, h.value)
	}
	sk.responses++
	if id := sk.requestID(); id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	req.Header.SetContentType("application/json")
	req.SetConnectionClose()
	req.SetBody(sk.body)
	sk.srv.served.Add(1)

	ex, err := open(sk.srv.http, req, sk.gone)
	if err != nil {
		sk.refuse(&refusal{status: 500, typ: "server_error", code: "internal_error",
			message: "the gateway could not serve this response; retry"})
		return
	}
	defer ex.close()
	if !ex.isStream() {
		sk.answer(ex, whole, limit)
		return
	}
	sk.relay(ex, whole, limit)
}

// requestID is the X-Request-Id of the socket's current response: the
// upgrade's id and the response's number, so the access lines of one
// socket share a prefix; "" (the handler makes one) when too long.
func (sk *socket) requestID() string {
	if len(sk.id) == 0 {
		return ""
	}
	id := string(sk.id) + "-" + strconv.Itoa(sk.responses)
	if len(id) > 128 {
		return ""
	}
	return id
}

// relay writes each event of a streamed answer as one text message, the
// data of its SSE event unchanged, and collects what the memory needs.
func (sk *socket) relay(ex *exchange, whole bool, limit int) {
	// The gateway holds each upstream event to provider.MaxSSEEvent; its
	// own frames (the event line) come on top.
	r := sseReader{r: bufio.NewReaderSize(ex.resp.BodyStream(), 32<<10), max: 2 * provider.MaxSSEEvent}
	sk.output = sk.output[:0]
	var id, terminal string
	over := false
	for {
		data, err := r.next()
		if err != nil {
			break
		}
		typ, _ := stringText(lookup(data, "type"))
		switch typ {
		case "response.created", "response.completed", "response.incomplete":
			if s, ok := stringText(lookup(lookup(data, "response"), "id")); ok {
				id = s
			}
		case "response.output_item.done":
			if item := lookup(data, "item"); !over && item != nil {
				if len(sk.output)+len(item) > limit {
					over = true
				} else {
					sk.output = appendItems(sk.output, item)
				}
			}
		}
		switch typ {
		case "response.completed", "response.incomplete", "response.failed", "error":
			terminal = typ
		}
		if sk.write(data) != nil {
			return // the client is gone: the reader closes gone
		}
	}
	if terminal == "" {
		// The answer ended without a last event (the gateway's
		// connection to it was cut): say so, or the client would wait.
		sk.refuse(&refusal{status: 502, typ: "upstream_error", code: "upstream_error",
			message: "the response stream ended before it completed"})
	}
	if id != "" {
		sk.settle(id, terminal, whole, over, limit)
	}
}

// answer relays an answer that is not a stream: a refusal (an error event
// with its status; the memory is unchanged, as no response was made), or
// a whole response object (its events are then response.completed alone).
func (sk *socket) answer(ex *exchange, whole bool, limit int) {
	status := ex.resp.StatusCode()
	body, err := ex.body(limit)
	if err != nil {
		sk.refuse(&refusal{status: 502, typ: "upstream_error", code: "upstream_error",
			message: "the answer could not be read"})
		return
	}
	if status == fasthttp.StatusOK {
		sk.body = append(append(sk.body[:0], `{"type":"response.completed","sequence_number":0,"response":`...), body...)
		sk.body = append(sk.body, '}')
		if sk.write(sk.body) != nil {
			return
		}
		id, _ := stringText(lookup(body, "id"))
		out, _ := arrayInner(lookup(body, "output"))
		sk.output = append(sk.output[:0], out...)
		if id != "" {
			sk.settle(id, "response.completed", whole, false, limit)
		}
		return
	}
	r := refusal{status: status, typ: "server_error", code: "internal_error",
		message: "the gateway answered " + strconv.Itoa(status)}
	if v := ex.resp.Header.Peek(fasthttp.HeaderRetryAfter); len(v) > 0 {
		r.retryAfter = string(v)
	}
	for k, v := range ex.resp.Header.All() {
		if name := strings.ToLower(string(k)); strings.HasPrefix(name, "x-ratelimit-") {
			r.ratelimitHdrs = append(r.ratelimitHdrs, [2]string{name, string(v)})
		}
	}
	obj := lookup(body, "error")
	if len(obj) == 0 || obj[0] != '{' {
		obj = nil
	}
	sk.body = appendError(sk.body[:0], &r, obj)
	sk.write(sk.body) //nolint:errcheck // a client that left is seen by the reader
}
