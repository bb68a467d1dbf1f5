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

var errNotChatCompletion = errors.New("upstream answer is not a chat completion")

// respUsage is a chat answer's usage in Responses terms: input_tokens is
// prompt_tokens (cached tokens included), cached its cached part.
type respUsage struct {
	ok                                      bool
	input, cached, output, reasoning, total int64
}

func readChatUsage(u *fastjson.Value) respUsage {
	if u == nil || u.Type() != fastjson.TypeObject {
		return respUsage{}
	}
	ru := respUsage{
		ok:        true,
		input:     u.GetInt64("prompt_tokens"),
		cached:    u.GetInt64("prompt_tokens_details", "cached_tokens"),
		output:    u.GetInt64("completion_tokens"),
		reasoning: u.GetInt64("completion_tokens_details", "reasoning_tokens"),
		total:     u.GetInt64("total_tokens"),
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
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, u.output, 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, u.reasoning, 10)
	dst = append(dst, `},"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.total, 10)
	return append(dst, '}')
}

// respMeta is what every response object of one answer shares. base is
// the id part every item id derives from (appendBase).
type respMeta struct {
	base    []byte
	created int64
	model   []byte
}

// appendBase appends the id part of an answer: the upstream's chat id,
// kept to [A-Za-z0-9_-], or when it sent none, a hash of data. Ids are
// derived, not random, so the translation stays a pure function; the
// upstream ids they come from are unique per answer.
func appendBase(dst []byte, chatID string, data []byte) []byte {
	n := len(dst)
	dst = appendIDPart(dst, chatID, 96)
	if len(dst) == n {
		dst = appendHash64(dst, data)
	}
	return dst
}

// respStatus is how an answer ended: status and incomplete_details.reason.
type respStatus struct {
	status, reason string
}

// finishStatus maps a chat finish_reason to the response's status.
func finishStatus(finish string) respStatus {
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
	dst = appendKeyString(dst, "status", st.status)
	dst = append(dst, `,"background":false,"error":`...)
	if e != nil {
		dst = append(dst, `{"code":`...)
		dst = jsonw.String(dst, e.code)
		dst = appendKeyString(dst, "message", e.message)
		dst = append(dst, `,"param":null`...)
		if e.typ != "" {
			dst = appendKeyString(dst, "type", e.typ)
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

// appendMessageID appends the id of the n-th message item of an answer
// (from 0): msg_ and the answer's id part, and _n after the first.
func appendMessageID(dst []byte, m *respMeta, n int) []byte {
	dst = append(dst, "msg_"...)
	dst = append(dst, m.base...)
	if n > 0 {
		dst = append(dst, '_')
		dst = strconv.AppendInt(dst, int64(n), 10)
	}
	return dst
}

// appendMessageItemHead appends a message item up to its content parts.
func appendMessageItemHead(dst, id []byte, status string) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","type":"message","status":`...)
	dst = jsonw.String(dst, status)
	return append(dst, `,"role":"assistant","content":[`...)
}

// appendTextPart appends an output_text part holding text.
func appendTextPart(dst []byte, text string) []byte {
	dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	dst = jsonw.String(dst, text)
	return append(dst, '}')
}

// appendRefusalPart appends a refusal part holding text.
func appendRefusalPart(dst []byte, text string) []byte {
	dst = append(dst, `{"type":"refusal","refusal":`...)
	dst = jsonw.String(dst, text)
	return append(dst, '}')
}

// callItem is one tool call of an answer, as the Responses API gives it.
type callItem struct {
	callID string // as the upstream sent it: the client sends it back
	tool   toolName
}

// appendCallItemID appends the quoted item id of call c: fc_ (function)
// or ctc_ (custom) and the call id's id-safe bytes.
func appendCallItemID(dst []byte, c *callItem) []byte {
	if c.tool.custom {
		dst = append(dst, `"ctc_`...)
	} else {
		dst = append(dst, `"fc_`...)
	}
	dst = appendIDPart(dst, c.callID, 96)
	return append(dst, '"')
}

// appendCallItem appends a function_call item, or a custom_tool_call item
// for a custom tool; payload is the arguments (function) or the input
// (custom).
func appendCallItem(dst []byte, c *callItem, status string, payload string) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendCallItemID(dst, c)
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
	dst = appendKeyString(dst, "call_id", c.callID)
	dst = appendKeyString(dst, "name", c.tool.name)
	if c.tool.ns != "" {
		dst = appendKeyString(dst, "namespace", c.tool.ns)
	}
	return append(dst, '}')
}

// customInput returns the input of a custom tool's call from its chat
// arguments ({"input": "…"}); arguments of any other shape are the input
// themselves, so nothing the model wrote is lost.
func customInput(p *fastjson.Parser, args string) string {
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
// fault, not the client's). Ids derive from the upstream's (appendBase).
func ChatToResponses(dst, chat, model []byte) ([]byte, error) {
	p := respParsers.Get()
	defer respParsers.Put(p)
	root, err := p.ParseBytes(chat)
	if err != nil || root.Type() != fastjson.TypeObject {
		return dst, errNotChatCompletion
	}
	choices := root.Get("choices")
	if choices == nil || choices.Type() != fastjson.TypeArray {
		return dst, errNotChatCompletion
	}
	arr, _ := choices.Array()
	if len(arr) == 0 || arr[0].Type() != fastjson.TypeObject {
		return dst, errNotChatCompletion
	}
	msg := arr[0].Get("message")
	if msg == nil || msg.Type() != fastjson.TypeObject {
		return dst, errNotChatCompletion
	}
	finish, _ := respStr(arr[0].Get("finish_reason"))
	st := finishStatus(finish)
	chatID, _ := respStr(root.Get("id"))

	r := respRequests.Get().(*respRequest) // for its scratch buffers
	defer r.release()
	m := respMeta{created: root.GetInt64("created"), model: model}
	r.scratch = appendBase(r.scratch[:0], chatID, chat)
	m.base = r.scratch
	out := r.buf[:0] // the output items
	r.scratch = appendMessageID(r.scratch, &m, 0)
	msgID := r.scratch[len(m.base):]
	content := msg.Get("content")
	refusal, _ := respStr(msg.Get("refusal"))
	if hasChatText(content) || refusal != "" {
		out = appendMessageItemHead(out, msgID, st.itemStatus())
		if hasChatText(content) {
			out = append(out, `{"type":"output_text","annotations":[],"logprobs":[],"text":"`...)
			out = appendChatText(out, content)
			out = append(out, `"}`...)
			if refusal != "" {
				out = append(out, ',')
			}
		}
		if refusal != "" {
			out = appendRefusalPart(out, refusal)
		}
		out = append(out, "]}"...)
	}
	if calls := msg.Get("tool_calls"); calls != nil && calls.Type() == fastjson.TypeArray {
		args := respParsers.Get()
		defer respParsers.Put(args)
		list, _ := calls.Array()
		for i, tc := range list {
			c := callItem{}
			c.callID, _ = respStr(tc.Get("id"))
			name, _ := respStr(tc.Get("function", "name"))
			arguments, _ := respStr(tc.Get("function", "arguments"))
			if name == "" {
				r.buf = out
				return dst, errors.New("upstream answer has a tool call without a name")
			}
			c.tool = parseChatToolName(name)
			if c.callID == "" { // derived, like every id here
				c.callID = "call_" + string(m.base) + "_" + strconv.Itoa(i)
			}
			if len(out) > 0 {
				out = append(out, ',')
			}
			payload := arguments
			if c.tool.custom {
				payload = customInput(args, arguments)
			}
			out = appendCallItem(out, &c, st.itemStatus(), payload)
		}
	}
	r.buf = out
	return appendResponseObject(dst, &m, st, out, readChatUsage(root.Get("usage")), nil), nil
}

// hasChatText reports whether a chat answer's content holds text.
func hasChatText(c *fastjson.Value) bool {
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

// appendChatText appends a chat answer's content, a string or text parts,
// JSON-escaped without quotes.
func appendChatText(dst []byte, c *fastjson.Value) []byte {
	if s, ok := respStr(c); ok {
		return appendEscaped(dst, s)
	}
	parts, _ := c.Array()
	for _, p := range parts {
		if s, ok := respStr(p.Get("text")); ok {
			dst = appendEscaped(dst, s)
		}
	}
	return dst
}
