package translate

// The Responses API request in the chat form, for a member that does not
// speak Responses (docs/providers.md, Responses API on every provider).
// This file holds the entry point and the request's scalar parameters; the
// conversation is in responses_input.go, the tools in responses_tools.go,
// the answers in responses_answer.go and responses_stream.go.

import (
	"strconv"
	"sync"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/internal/jsonw"
)

// Error codes of the requests a translation refuses.
const (
	respCodeInvalid          = "invalid_request"
	respCodePreviousResponse = "previous_response_not_supported"
	respCodeUnsupported      = "unsupported_parameter"
)

func respInvalid(msg string) *Error {
	return &Error{Status: 400, Code: respCodeInvalid, Message: msg}
}

// respAt names element i of the array at path, for error messages.
func respAt(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// respRequest is the state of one ResponsesToChat call, pooled so a
// request translates without allocating in steady state. Not safe for
// concurrent use; nothing in it outlives the call.
type respRequest struct {
	dst     []byte
	dropped []string
	n       int // chat messages written
	asst    respAsstState
	// tools holds the identities of the tools written (views of the
	// parser's memory), for duplicate and tool_choice look-ups.
	tools   []respToolName
	scratch []byte
	buf     []byte // the answer's output items (ChatToResponses)
}

// respAsstState is the assistant message left open so the tool calls that
// follow its text join it, as the chat model emitted them.
type respAsstState uint8

const (
	respAsstNone  respAsstState = iota
	respAsstText                // {"role":"assistant","content":"…" written
	respAsstCalls               // …,"tool_calls":[{…} written
)

var respRequests = sync.Pool{New: func() any { return new(respRequest) }}

func (r *respRequest) release() {
	r.dst = nil
	clear(r.dropped)
	r.dropped = r.dropped[:0]
	r.n, r.asst = 0, respAsstNone
	clear(r.tools)
	r.tools = r.tools[:0]
	respRequests.Put(r)
}

// ResponsesToChat appends to dst the chat completions request for the
// Responses API request body, and returns the tool types it dropped (for
// X-Gateway-Dropped-Tools; read-only, possibly shared). A request it cannot
// express is an *Error (400); dst is then returned as it was. The mapping,
// each dropped field and why, is in docs/providers.md (Responses API on
// every provider).
func ResponsesToChat(dst, body []byte, o Options) (out []byte, dropped []string, err error) {
	p := respParsers.Get()
	defer respParsers.Put(p)
	root, perr := p.ParseBytes(body)
	if perr != nil || root.Type() != fastjson.TypeObject {
		return dst, nil, respInvalid("request body must be a JSON object")
	}
	if err := refuseStoredState(root); err != nil {
		return dst, nil, err
	}
	r := respRequests.Get().(*respRequest)
	defer r.release()
	start := len(dst)
	r.dst = dst
	if err := r.request(root, o); err != nil {
		return r.dst[:start], nil, err
	}
	return r.dst, r.takeDropped(), nil
}

// respDroppedAlone holds, for each tool type the gateway knows, a one-element
// list of it: Codex drops web_search on every request, and sharing the
// list keeps that request free of allocations.
var respDroppedAlone = func() map[string][]string {
	m := map[string][]string{}
	for _, t := range respHostedTools {
		m[t] = []string{t}
	}
	return m
}()

// takeDropped returns the dropped tool types for the caller.
func (r *respRequest) takeDropped() []string {
	switch len(r.dropped) {
	case 0:
		return nil
	case 1:
		if l, ok := respDroppedAlone[r.dropped[0]]; ok {
			return l
		}
	}
	return append([]string(nil), r.dropped...)
}

// refuseStoredState refuses what only a member holding OpenAI's stored
// state could serve: a previous response, a conversation, a stored
// prompt, background runs.
func refuseStoredState(root *fastjson.Value) error {
	if !respNull(root.Get("previous_response_id")) {
		return &Error{Status: 400, Code: respCodePreviousResponse,
			Message: "previous_response_id is not supported by this model's provider, which keeps no responses: send the whole conversation in input"}
	}
	for _, k := range [...]string{"conversation", "prompt"} {
		if !respNull(root.Get(k)) {
			return &Error{Status: 400, Code: respCodeUnsupported,
				Message: k + " is not supported by this model's provider, which keeps no stored state: send the whole conversation in input"}
		}
	}
	if b := root.Get("background"); b != nil && b.Type() == fastjson.TypeTrue {
		return &Error{Status: 400, Code: respCodeUnsupported,
			Message: "background is not supported by this model's provider"}
	}
	return nil
}

// request writes the whole chat request.
func (r *respRequest) request(root *fastjson.Value, o Options) error {
	r.dst = append(r.dst, `{"model":`...)
	r.dst = jsonw.String(r.dst, byteconv.String(o.Model))
	r.dst = append(r.dst, `,"messages":[`...)
	if err := r.conversation(root); err != nil {
		return err
	}
	r.dst = append(r.dst, ']')
	if err := r.params(root, o); err != nil {
		return err
	}
	if err := r.toolsAndChoice(root); err != nil {
		return err
	}
	r.dst = append(r.dst, '}')
	return nil
}

// params writes the scalar parameters that have a chat counterpart.
func (r *respRequest) params(root *fastjson.Value, o Options) error {
	if v := root.Get("max_output_tokens"); !respNull(v) {
		if n, err := v.Int64(); err != nil || n < 1 {
			return respInvalid("max_output_tokens must be a positive integer")
		}
		if o.MaxCompletionTokens {
			r.dst = append(r.dst, `,"max_completion_tokens":`...)
		} else {
			r.dst = append(r.dst, `,"max_tokens":`...)
		}
		var ok bool
		if r.dst, ok = appendRespNumber(r.dst, v); !ok {
			return respInvalid("max_output_tokens must be a positive integer")
		}
	}
	for _, k := range [...]string{"temperature", "top_p"} {
		if v := root.Get(k); !respNull(v) {
			if v.Type() != fastjson.TypeNumber {
				return respInvalid(k + " must be a number")
			}
			r.dst = append(r.dst, ',', '"')
			r.dst = append(r.dst, k...)
			r.dst = append(r.dst, '"', ':')
			var ok bool
			if r.dst, ok = appendRespNumber(r.dst, v); !ok {
				return respInvalid(k + " must be a number")
			}
		}
	}
	// user, or its successor safety_identifier when user is absent.
	user := root.Get("user")
	if respNull(user) {
		user = root.Get("safety_identifier")
	}
	if !respNull(user) {
		s, ok := respStr(user)
		if !ok {
			return respInvalid("user and safety_identifier must be strings")
		}
		r.dst = appendRespKeyString(r.dst, "user", s)
	}
	if err := r.reasoning(root.Get("reasoning")); err != nil {
		return err
	}
	if err := r.textFormat(root.Get("text")); err != nil {
		return err
	}
	if o.Stream {
		r.dst = append(r.dst, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return nil
}

// reasoning writes reasoning.effort as reasoning_effort, which the chat
// form of OpenAI, Gemini and Vertex takes; xhigh, which only OpenAI's
// newest models know, asks for high.
func (r *respRequest) reasoning(v *fastjson.Value) error {
	if respNull(v) {
		return nil
	}
	if v.Type() != fastjson.TypeObject {
		return respInvalid("reasoning must be an object")
	}
	e := v.Get("effort")
	if respNull(e) {
		return nil
	}
	effort, ok := respStr(e)
	if !ok {
		return respInvalid("reasoning.effort must be a string")
	}
	switch effort {
	case "none", "minimal", "low", "medium", "high":
	case "xhigh":
		effort = "high"
	default:
		return respInvalid("reasoning.effort must be one of none, minimal, low, medium, high, xhigh")
	}
	r.dst = appendRespKeyString(r.dst, "reasoning_effort", effort)
	return nil
}

// textFormat writes text.format as response_format: json_schema (name,
// schema, strict, description) and json_object; text is the default.
func (r *respRequest) textFormat(text *fastjson.Value) error {
	if respNull(text) {
		return nil
	}
	if text.Type() != fastjson.TypeObject {
		return respInvalid("text must be an object")
	}
	f := text.Get("format")
	if respNull(f) {
		return nil
	}
	if f.Type() != fastjson.TypeObject {
		return respInvalid("text.format must be an object")
	}
	typ, _ := respStr(f.Get("type"))
	switch typ {
	case "text":
		return nil
	case "json_object":
		r.dst = append(r.dst, `,"response_format":{"type":"json_object"}`...)
		return nil
	case "json_schema":
	default:
		return respInvalid(`text.format.type must be "text", "json_schema" or "json_object"`)
	}
	name, ok := respStr(f.Get("name"))
	if !ok || name == "" {
		return respInvalid("text.format.name must be a non-empty string")
	}
	schema := f.Get("schema")
	if schema == nil || schema.Type() != fastjson.TypeObject {
		return respInvalid("text.format.schema must be an object")
	}
	r.dst = append(r.dst, `,"response_format":{"type":"json_schema","json_schema":{"name":`...)
	r.dst = jsonw.String(r.dst, name)
	if d := f.Get("description"); !respNull(d) {
		s, ok := respStr(d)
		if !ok {
			return respInvalid("text.format.description must be a string")
		}
		r.dst = appendRespKeyString(r.dst, "description", s)
	}
	if s := f.Get("strict"); !respNull(s) {
		if s.Type() != fastjson.TypeTrue && s.Type() != fastjson.TypeFalse {
			return respInvalid("text.format.strict must be a boolean")
		}
		r.dst = append(r.dst, `,"strict":`...)
		r.dst = s.MarshalTo(r.dst)
	}
	r.dst = append(r.dst, `,"schema":`...)
	var ok2 bool
	if r.dst, ok2 = appendRespValue(r.dst, schema); !ok2 {
		return respInvalid("text.format.schema holds a number that is not JSON")
	}
	r.dst = append(r.dst, "}}"...)
	return nil
}
