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
	// additionalTools: the input holds items with tools of their own
	// (additional_tools, the client's tool_search_output).
	additionalTools bool
	// tools holds the identities of the tools written (views of the
	// parser's memory), for duplicate and tool_choice look-ups.
	tools   []respToolName
	scratch []byte
	numbers []byte // appendRespObject's scratch while scratch holds a call's arguments
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
	r.n, r.asst, r.additionalTools = 0, respAsstNone, false
	clear(r.tools)
	r.tools = r.tools[:0]
	// A huge argument, image or answer must not stay pinned in the pool.
	if cap(r.scratch) > maxPooledStreamBuf {
		r.scratch = nil
	}
	if cap(r.buf) > maxPooledStreamBuf {
		r.buf = nil
	}
	if cap(r.numbers) > maxPooledStreamBuf {
		r.numbers = nil
	}
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
	top := root.GetObject()
	if perr != nil || top == nil {
		return dst, nil, respInvalid("request body must be a JSON object")
	}
	var f respFields
	f.read(top)
	if err := refuseStoredState(&f); err != nil {
		return dst, nil, err
	}
	r := respRequests.Get().(*respRequest)
	defer r.release()
	start := len(dst)
	r.dst = dst
	if err := r.request(&f, o); err != nil {
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

// respFields are the top-level members the translation reads, each the
// first copy as fastjson's Get would find it, picked out in one pass over
// the body's members; every other member is dropped.
type respFields struct {
	previousResponseID, conversation, prompt, background       *fastjson.Value
	instructions, input                                        *fastjson.Value
	maxOutputTokens, temperature, topP, user, safetyIdentifier *fastjson.Value
	reasoning, text, tools, toolChoice, parallelToolCalls      *fastjson.Value
}

// read picks the members out of top.
func (f *respFields) read(top *fastjson.Object) {
	top.Visit(func(k []byte, v *fastjson.Value) {
		var slot **fastjson.Value
		switch string(k) {
		case "previous_response_id":
			slot = &f.previousResponseID
		case "conversation":
			slot = &f.conversation
		case "prompt":
			slot = &f.prompt
		case "background":
			slot = &f.background
		case "instructions":
			slot = &f.instructions
		case "input":
			slot = &f.input
		case "max_output_tokens":
			slot = &f.maxOutputTokens
		case "temperature":
			slot = &f.temperature
		case "top_p":
			slot = &f.topP
		case "user":
			slot = &f.user
		case "safety_identifier":
			slot = &f.safetyIdentifier
		case "reasoning":
			slot = &f.reasoning
		case "text":
			slot = &f.text
		case "tools":
			slot = &f.tools
		case "tool_choice":
			slot = &f.toolChoice
		case "parallel_tool_calls":
			slot = &f.parallelToolCalls
		default:
			return
		}
		if *slot == nil {
			*slot = v
		}
	})
}

// refuseStoredState refuses what only a member holding OpenAI's stored
// state could serve: a previous response, a conversation, a stored
// prompt, background runs.
func refuseStoredState(f *respFields) error {
	if !respNull(f.previousResponseID) {
		return &Error{Status: 400, Code: respCodePreviousResponse,
			Message: "previous_response_id is not supported by this model's provider, which keeps no responses: send the whole conversation in input"}
	}
	for _, m := range [...]struct {
		name string
		v    *fastjson.Value
	}{{"conversation", f.conversation}, {"prompt", f.prompt}} {
		if !respNull(m.v) {
			return &Error{Status: 400, Code: respCodeUnsupported,
				Message: m.name + " is not supported by this model's provider, which keeps no stored state: send the whole conversation in input"}
		}
	}
	if b := f.background; b != nil && b.Type() == fastjson.TypeTrue {
		return &Error{Status: 400, Code: respCodeUnsupported,
			Message: "background is not supported by this model's provider"}
	}
	return nil
}

// request writes the whole chat request.
func (r *respRequest) request(f *respFields, o Options) error {
	r.dst = append(r.dst, `{"model":`...)
	r.dst = jsonw.String(r.dst, byteconv.String(o.Model))
	r.dst = append(r.dst, `,"messages":[`...)
	if err := r.conversation(f); err != nil {
		return err
	}
	r.dst = append(r.dst, ']')
	if err := r.params(f, o); err != nil {
		return err
	}
	if err := r.toolsAndChoice(f); err != nil {
		return err
	}
	r.dst = append(r.dst, '}')
	return nil
}

// params writes the scalar parameters that have a chat counterpart.
func (r *respRequest) params(f *respFields, o Options) error {
	if v := f.maxOutputTokens; !respNull(v) {
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
	for _, p := range [...]struct {
		k string
		v *fastjson.Value
	}{{"temperature", f.temperature}, {"top_p", f.topP}} {
		if k, v := p.k, p.v; !respNull(v) {
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
	user := f.user
	if respNull(user) {
		user = f.safetyIdentifier
	}
	if !respNull(user) {
		s, ok := respStr(user)
		if !ok {
			return respInvalid("user and safety_identifier must be strings")
		}
		r.dst = appendRespKeyString(r.dst, "user", s)
	}
	if err := r.reasoning(f.reasoning); err != nil {
		return err
	}
	if err := r.textFormat(f.text); err != nil {
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
	at := len(r.dst)
	var k int
	switch r.dst, k = appendStringOrNull(append(r.dst, `,"description":`...), f.Get("description")); k {
	case rawOther:
		return respInvalid("text.format.description must be a string")
	case rawNull:
		r.dst = r.dst[:at]
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
	if r.dst, r.scratch, ok2 = appendRespObject(r.dst, schema, r.scratch); !ok2 {
		return respInvalid("text.format.schema holds a number that is not JSON")
	}
	r.dst = append(r.dst, "}}"...)
	return nil
}
