package translate

// A chat completion as a Responses API response object, and the writers of
// the response object and its output items that the stream translator
// (responses_stream.go) shares.

import (
	"errors"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/internal/jsonw"
)

var errRespNotChat = errors.New("upstream answer is not a chat completion")

// respUsage is a chat answer's usage in Responses terms: input_tokens is
// prompt_tokens (the cache's tokens included), cached and cacheWrite the
// parts read from and written to the cache (docs/quotas.md, Cached tokens).
type respUsage struct {
	ok                                                  bool
	input, cached, cacheWrite, output, reasoning, total int64
}

func readRespChatUsage(u *fastjson.Value) respUsage {
	if u == nil || u.Type() != fastjson.TypeObject {
		return respUsage{}
	}
	ru := respUsage{
		ok:         true,
		input:      u.GetInt64("prompt_tokens"),
		cached:     u.GetInt64("prompt_tokens_details", "cached_tokens"),
		cacheWrite: u.GetInt64("prompt_tokens_details", "cache_write_tokens"),
		output:     u.GetInt64("completion_tokens"),
		reasoning:  u.GetInt64("completion_tokens_details", "reasoning_tokens"),
		total:      u.GetInt64("total_tokens"),
	}
	if ru.total == 0 {
		ru.total = ru.input + ru.output
	}
	return ru
}

func appendRespUsage(dst []byte, u respUsage) []byte {
	if !u.ok {
		return append(dst, "null"...)
	}
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, u.input, 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.cached, 10)
	if u.cacheWrite > 0 {
		dst = append(dst, `,"cache_write_tokens":`...)
		dst = strconv.AppendInt(dst, u.cacheWrite, 10)
	}
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, u.output, 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, u.reasoning, 10)
	dst = append(dst, `},"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.total, 10)
	return append(dst, '}')
}

// respMeta is what every response object of one answer shares. base is
// the id part every item id derives from (appendRespBase).
type respMeta struct {
	base    []byte
	created int64
	model   []byte
}

// appendRespBase appends the id part of an answer: the upstream's chat id,
// kept to [A-Za-z0-9_-], or when it sent none, a hash of data. Ids are
// derived, not random, so the translation stays a pure function; the
// upstream ids they come from are unique per answer.
func appendRespBase(dst []byte, chatID string, data []byte) []byte {
	n := len(dst)
	dst = appendRespIDPart(dst, chatID, 96)
	if len(dst) == n {
		dst = appendRespHash64(dst, data)
	}
	return dst
}

// respStatus is how an answer ended: status and incomplete_details.reason.
type respStatus struct {
	status, reason string
}

// respFinishStatus maps a chat finish_reason to the response's status.
func respFinishStatus(finish string) respStatus {
	switch finish {
	case "length":
		return respStatus{"incomplete", "max_output_tokens"}
	case "content_filter":
		return respStatus{"incomplete", "content_filter"}
	}
	return respStatus{status: "completed"}
}

// itemStatus is an output item's status in a response of status st.
func (st respStatus) itemStatus() string {
	if st.status == "incomplete" {
		return "incomplete"
	}
	return "completed"
}

// respError is the error of a failed response.
type respError struct {
	code, message, typ string
}

// appendResponseObject appends a response object. output is its items,
// already serialized and joined by commas. The request's parameters are
// not known here; they are written as OpenAI writes their defaults.
func appendResponseObject(dst []byte, m *respMeta, st respStatus, output []byte, u respUsage, e *respError) []byte {
	dst = append(dst, `{"id":"resp_`...)
	dst = append(dst, m.base...)
	dst = append(dst, `","object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, m.created, 10)
	dst = appendRespKeyString(dst, "status", st.status)
	dst = append(dst, `,"background":false,"error":`...)
	if e != nil {
		dst = append(dst, `{"code":`...)
		dst = jsonw.String(dst, e.code)
		dst = appendRespKeyString(dst, "message", e.message)
		dst = append(dst, `,"param":null`...)
		if e.typ != "" {
			dst = appendRespKeyString(dst, "type", e.typ)
		}
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"incomplete_details":`...)
	if st.reason != "" {
		dst = append(dst, `{"reason":`...)
		dst = jsonw.String(dst, st.reason)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"instructions":null,"max_output_tokens":null,"model":`...)
	dst = jsonw.String(dst, byteconv.String(m.model))
	dst = append(dst, `,"output":[`...)
	dst = append(dst, output...)
	dst = append(dst, `],"parallel_tool_calls":true,"previous_response_id":null,"temperature":null,"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":`...)
	dst = appendRespUsage(dst, u)
	return append(dst, `,"user":null,"metadata":{}}`...)
}

// appendRespMessageID appends the id of the n-th message item of an answer
// (from 0): msg_ and the answer's id part, and _n after the first.
func appendRespMessageID(dst []byte, m *respMeta, n int) []byte {
	dst = append(dst, "msg_"...)
	dst = append(dst, m.base...)
	if n > 0 {
		dst = append(dst, '_')
		dst = strconv.AppendInt(dst, int64(n), 10)
	}
	return dst
}

// appendRespMessageHead appends a message item up to its content parts.
func appendRespMessageHead(dst, id []byte, status string) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","type":"message","status":`...)
	dst = jsonw.String(dst, status)
	return append(dst, `,"role":"assistant","content":[`...)
}

// appendRespTextPart appends an output_text part holding text.
func appendRespTextPart(dst []byte, text string) []byte {
	dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	dst = jsonw.String(dst, text)
	return append(dst, '}')
}

// appendRespRefusalPart appends a refusal part holding text.
func appendRespRefusalPart(dst []byte, text string) []byte {
	dst = append(dst, `{"type":"refusal","refusal":`...)
	dst = jsonw.String(dst, text)
	return append(dst, '}')
}

// respCallItem is one tool call of an answer, as the Responses API gives it.
type respCallItem struct {
	callID string // as the upstream sent it: the client sends it back
	tool   respToolName
}

// appendRespCallItemID appends the quoted item id of call c: fc_ (function),
// ctc_ (custom) or tsc_ (tool search) and the call id's id-safe bytes.
func appendRespCallItemID(dst []byte, c *respCallItem) []byte {
	switch {
	case c.tool.search:
		dst = append(dst, `"tsc_`...)
	case c.tool.custom:
		dst = append(dst, `"ctc_`...)
	default:
		dst = append(dst, `"fc_`...)
	}
	dst = appendRespIDPart(dst, c.callID, 96)
	return append(dst, '"')
}

// appendRespCallItem appends a function_call item, a custom_tool_call item
// for a custom tool, or a tool_search_call item for the client's tool
// search; payload is the arguments (function, tool search) or the input
// (custom).
func appendRespCallItem(dst []byte, c *respCallItem, status string, payload string) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendRespCallItemID(dst, c)
	if c.tool.search {
		dst = append(dst, `,"type":"tool_search_call","status":`...)
		dst = jsonw.String(dst, status)
		dst = append(dst, `,"execution":"client","arguments":`...)
		dst = appendRespSearchArguments(dst, payload)
		dst = appendRespKeyString(dst, "call_id", c.callID)
		return append(dst, '}')
	}
	if c.tool.custom {
		dst = append(dst, `,"type":"custom_tool_call","status":`...)
		dst = jsonw.String(dst, status)
		dst = append(dst, `,"input":`...)
	} else {
		dst = append(dst, `,"type":"function_call","status":`...)
		dst = jsonw.String(dst, status)
		dst = append(dst, `,"arguments":`...)
	}
	dst = jsonw.String(dst, payload)
	dst = appendRespKeyString(dst, "call_id", c.callID)
	dst = appendRespKeyString(dst, "name", c.tool.name)
	if c.tool.ns != "" {
		dst = appendRespKeyString(dst, "namespace", c.tool.ns)
	}
	return append(dst, '}')
}

// respCustomInput returns the input of a custom tool's call from its chat
// arguments ({"input": "…"}); arguments of any other shape are the input
// themselves, so nothing the model wrote is lost.
func respCustomInput(p *fastjson.Parser, args string) string {
	v, err := p.Parse(args)
	if err != nil || v.Type() != fastjson.TypeObject {
		return args
	}
	if s, ok := respStr(v.Get("input")); ok {
		return s
	}
	return args
}

// ChatToResponses appends to dst the Responses API response object for
// the chat completion answer chat; model is the id the client asked for.
// An answer that is not a chat completion is an error (the upstream's
// fault, not the client's). Ids derive from the upstream's (appendRespBase).
func ChatToResponses(dst, chat, model []byte) ([]byte, error) {
	p := respParsers.Get()
	defer respParsers.Put(p)
	root, err := p.ParseBytes(chat)
	if err != nil || root.Type() != fastjson.TypeObject {
		return dst, errRespNotChat
	}
	choices := root.Get("choices")
	if choices == nil || choices.Type() != fastjson.TypeArray {
		return dst, errRespNotChat
	}
	arr, _ := choices.Array()
	if len(arr) == 0 || arr[0].Type() != fastjson.TypeObject {
		return dst, errRespNotChat
	}
	msg := arr[0].Get("message")
	if msg == nil || msg.Type() != fastjson.TypeObject {
		return dst, errRespNotChat
	}
	finish, _ := respStr(arr[0].Get("finish_reason"))
	st := respFinishStatus(finish)
	chatID, _ := respStr(root.Get("id"))

	r := respRequests.Get().(*respRequest) // for its scratch buffers
	defer r.release()
	m := respMeta{created: root.GetInt64("created"), model: model}
	r.scratch = appendRespBase(r.scratch[:0], chatID, chat)
	m.base = r.scratch
	out := r.buf[:0] // the output items
	r.scratch = appendRespMessageID(r.scratch, &m, 0)
	msgID := r.scratch[len(m.base):]
	content := msg.Get("content")
	refusal, _ := respStr(msg.Get("refusal"))
	if respHasChatText(content) || refusal != "" {
		out = appendRespMessageHead(out, msgID, st.itemStatus())
		if respHasChatText(content) {
			out = append(out, `{"type":"output_text","annotations":[],"logprobs":[],"text":"`...)
			out = appendRespChatText(out, content)
			out = append(out, `"}`...)
			if refusal != "" {
				out = append(out, ',')
			}
		}
		if refusal != "" {
			out = appendRespRefusalPart(out, refusal)
		}
		out = append(out, "]}"...)
	}
	if calls := msg.Get("tool_calls"); calls != nil && calls.Type() == fastjson.TypeArray {
		args := respParsers.Get()
		defer respParsers.Put(args)
		list, _ := calls.Array()
		for i, tc := range list {
			c := respCallItem{}
			c.callID, _ = respStr(tc.Get("id"))
			name, _ := respStr(tc.Get("function", "name"))
			arguments, _ := respStr(tc.Get("function", "arguments"))
			if name == "" {
				r.buf = out
				return dst, errors.New("upstream answer has a tool call without a name")
			}
			c.tool = parseRespChatToolName(name)
			if c.callID == "" { // derived, like every id here
				c.callID = "call_" + string(m.base) + "_" + strconv.Itoa(i)
			}
			if len(out) > 0 {
				out = append(out, ',')
			}
			payload := arguments
			if c.tool.custom {
				payload = respCustomInput(args, arguments)
			}
			out = appendRespCallItem(out, &c, st.itemStatus(), payload)
		}
	}
	r.buf = out
	return appendResponseObject(dst, &m, st, out, readRespChatUsage(root.Get("usage")), nil), nil
}

// respHasChatText reports whether a chat answer's content holds text.
func respHasChatText(c *fastjson.Value) bool {
	if s, ok := respStr(c); ok {
		return s != ""
	}
	if c == nil || c.Type() != fastjson.TypeArray {
		return false
	}
	parts, _ := c.Array()
	for _, p := range parts {
		if s, ok := respStr(p.Get("text")); ok && s != "" {
			return true
		}
	}
	return false
}

// appendRespChatText appends a chat answer's content, a string or text parts,
// JSON-escaped without quotes.
func appendRespChatText(dst []byte, c *fastjson.Value) []byte {
	if s, ok := respStr(c); ok {
		return appendRespEscaped(dst, s)
	}
	parts, _ := c.Array()
	for _, p := range parts {
		if s, ok := respStr(p.Get("text")); ok {
			dst = appendRespEscaped(dst, s)
		}
	}
	return dst
}
