package responsesws

import (
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/jsonscan"
)

// What a client sends on a socket: {"type":"response.create", …} with the
// top-level fields of POST /v1/responses, and {"type":"response.processed",
// "response_id":…}, which Codex sends after it has recorded a response and
// which needs no answer (docs/api.md, Responses over WebSocket).

// kind is the type of a client message.
type kind uint8

const (
	kindCreate kind = iota
	kindProcessed
)

// create is a parsed response.create. doc is the message as received;
// the other fields are views into it.
type create struct {
	doc []byte
	// model is the "model" value (a JSON string), nil when absent.
	model []byte
	// generate is false for a warm-up (Codex's generate: false).
	generate bool
	// previous is previous_response_id's text when hasPrevious.
	previous    string
	hasPrevious bool
	// input is the "input" value: a JSON string or array; nil when absent
	// or null.
	input []byte
}

// refusal is an error event's content: the HTTP status and OpenAI error
// type and code an equivalent HTTP request would get.
type refusal struct {
	status        int
	typ, code     string
	message       string
	retryAfter    string // Retry-After, when the answer had one
	ratelimitHdrs [][2]string
}

func badMessage(msg string) *refusal {
	return &refusal{status: 400, typ: "invalid_request_error", code: "invalid_request", message: msg}
}

// Keys of a message the socket reads or removes. Each must appear at most
// once and exactly so spelled: a key equal to one of them only under case
// folding is refused, as the upstream's decoder (encoding/json folds case)
// might take it for the one the gateway read.
var controlled = [...]string{"type", "model", "generate", "previous_response_id", "input", "stream", "stream_id", "background"}

// parseMessage reads a client message. A message the socket cannot serve
// gets a refusal (400, the socket stays open).
func parseMessage(data []byte) (kind, create, *refusal) {
	c := create{doc: data, generate: true}
	if err := fastjson.ValidateBytes(data); err != nil {
		return 0, c, badMessage("message is not valid JSON: " + err.Error())
	}
	if i := jsonscan.SkipSpace(data, 0); data[i] != '{' {
		return 0, c, badMessage("message must be a JSON object")
	}
	var seen [len(controlled)]bool
	var typ []byte
	var bad *refusal
	members(data, func(m member) bool {
		for i, k := range controlled {
			if !strings.EqualFold(m.key, k) {
				continue
			}
			switch {
			case m.key != k:
				bad = badMessage("key " + strconv.Quote(m.key) + " is not accepted; write it " + strconv.Quote(k))
			case seen[i]:
				bad = badMessage(strconv.Quote(k) + " is sent more than once; send it once")
			}
			seen[i] = true
			if bad != nil {
				return false
			}
			bad = c.read(k, m.value, &typ)
			return bad == nil
		}
		return true
	})
	if bad != nil {
		return 0, c, bad
	}
	t, ok := stringText(typ)
	switch {
	case !ok:
		return 0, c, badMessage(`message has no "type"; want "response.create"`)
	case t == "response.processed":
		return kindProcessed, c, nil
	case t != "response.create":
		return 0, c, badMessage("message type " + strconv.Quote(t) + ` is not supported; want "response.create"`)
	}
	return kindCreate, c, nil
}

// read takes the value v of controlled key k into c (type into typ).
func (c *create) read(k string, v []byte, typ *[]byte) *refusal {
	null := string(v) == "null"
	switch k {
	case "type":
		*typ = v
	case "model":
		c.model = v
	case "generate":
		switch string(v) {
		case "true", "null":
		case "false":
			c.generate = false
		default:
			return badMessage(`"generate" must be a boolean`)
		}
	case "previous_response_id":
		if null {
			return nil
		}
		s, ok := stringText(v)
		if !ok {
			return badMessage(`"previous_response_id" must be a string`)
		}
		c.previous, c.hasPrevious = s, true
	case "input":
		switch {
		case null:
		case v[0] == '"' || v[0] == '[':
			c.input = v
		default:
			return badMessage(`"input" must be a string or an array of items`)
		}
	case "stream_id":
		if !null {
			return badMessage(`"stream_id" (multiplexed responses) is not supported; send responses one after another`)
		}
	case "background":
		if string(v) == "true" {
			return badMessage(`"background" is not supported over WebSocket`)
		}
	}
	return nil
}

// inputItems appends the items of c's input to dst, comma-separated JSON
// values without brackets: an array's elements as sent, a string as the
// user message it stands for.
func (c *create) inputItems(dst []byte) []byte {
	switch {
	case c.input == nil:
		return dst
	case c.input[0] == '"':
		dst = append(dst, `{"type":"message","role":"user","content":`...)
		dst = append(dst, c.input...)
		return append(dst, '}')
	}
	inner, _ := arrayInner(c.input)
	return append(dst, inner...)
}

// body appends the POST /v1/responses body for c to dst: its members as
// sent, less the socket's own (type, generate, stream_id, background) and
// stream, plus "stream":true. With items (expand) the input is replaced by
// them and previous_response_id is removed: the socket's memory stands in
// for the response it named.
func (c *create) body(dst []byte, expand bool, items []byte) []byte {
	dst = append(dst, '{')
	members(c.doc, func(m member) bool {
		switch m.key {
		case "type", "generate", "stream", "stream_id", "background":
			return true
		case "input", "previous_response_id":
			if expand {
				return true
			}
		}
		dst = append(dst, m.rawKey...)
		dst = append(dst, ':')
		dst = append(dst, m.value...)
		dst = append(dst, ',')
		return true
	})
	dst = append(dst, `"stream":true`...)
	if expand {
		dst = append(dst, `,"input":[`...)
		dst = append(dst, items...)
		dst = append(dst, ']')
	}
	return append(dst, '}')
}
