package translate

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strconv"

	"github.com/valyala/fastjson"
)

// ChatToMessages appends to dst the Messages API answer for the chat
// completion chat: its text as a text block, its tool calls as tool_use
// blocks (arguments parsed to input), finish_reason as stop_reason, the
// usage in Anthropic's terms, id "msg_" + the chat id, model the client's
// id. logprobs, system_fingerprint, service_tier, annotations and
// reasoning_content are dropped. An answer that is not a chat completion,
// or whose tool call arguments are not a JSON object, is an error (the
// upstream broke the protocol); dst then holds a partial answer.
func ChatToMessages(dst, chat, model []byte) ([]byte, error) {
	p := msgParsers.Get()
	defer msgParsers.Put(p)
	v, err := p.ParseBytes(chat)
	if err != nil || v.GetObject() == nil {
		return dst, errNotChat
	}
	choices := v.GetArray("choices")
	if len(choices) == 0 {
		return dst, errors.New("the upstream's chat completion has no choices")
	}
	c0 := choices[0]
	msg := c0.Get("message")
	if msg.GetObject() == nil {
		return dst, errors.New("the upstream's chat completion has no message")
	}
	dst = appendMessageID(append(dst, `{"id":`...), v.Get("id"))
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = appendString(dst, model)
	dst = append(dst, `,"content":[`...)
	n := 0
	block := func(dst []byte) []byte {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		return dst
	}
	c := msg.Get("content")
	if parts := c.GetArray(); parts != nil {
		// Some servers answer with content parts.
		for _, pt := range parts {
			if t, _ := str(pt.Get("type")); string(t) == "text" {
				dst, n = textBlock(dst, n, pt.Get("text"))
			}
		}
	} else {
		dst, n = textBlock(dst, n, c) // nothing for null
	}
	dst, n = textBlock(dst, n, msg.Get("refusal"))
	for i, tc := range msg.GetArray("tool_calls") {
		dst = append(block(dst), `{"type":"tool_use","id":`...)
		var ok bool
		if dst, ok = appendRawString(dst, tc.Get("id")); !ok {
			return dst, errors.New("the upstream's tool call " + strconv.Itoa(i) + " has no id")
		}
		dst = append(dst, `,"name":`...)
		if dst, ok = appendRawString(dst, tc.Get("function", "name")); !ok {
			return dst, errors.New("the upstream's tool call " + strconv.Itoa(i) + " has no function name")
		}
		dst = append(dst, `,"input":`...)
		if dst, err = appendInput(dst, tc.Get("function", "arguments")); err != nil {
			return dst, err
		}
		dst = append(dst, '}')
	}
	fr, _ := str(c0.Get("finish_reason"))
	dst = append(dst, `],"stop_reason":"`...)
	dst = append(dst, stopReason(fr)...)
	dst = append(dst, `","stop_sequence":null,"usage":`...)
	dst = appendUsage(dst, readUsage(v.Get("usage")))
	return append(dst, '}'), nil
}

var errNotChat = errors.New("the upstream's answer is not a chat completion")

// textBlock writes a text block for the string v unless it is absent or
// empty; n counts the blocks written.
func textBlock(dst []byte, n int, v *fastjson.Value) ([]byte, int) {
	m := len(dst)
	if n > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"type":"text","text":`...)
	s := len(dst)
	dst, ok := appendRawString(dst, v)
	if !ok || len(dst)-s == 2 {
		return dst[:m], n
	}
	return append(dst, '}'), n + 1
}

// appendInput writes a tool call's arguments string as the tool_use input.
// Empty arguments (a function without parameters, as some servers send it)
// are {}; anything but a JSON object is an error, not a guess: a coding tool
// acting on a mangled input is worse than a failed attempt.
func appendInput(dst []byte, args *fastjson.Value) ([]byte, error) {
	if isNull(args) {
		return append(dst, "{}"...), nil
	}
	b, ok := str(args)
	if !ok {
		return dst, errors.New("the upstream's tool call arguments are not a string")
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return append(dst, "{}"...), nil
	}
	if b[0] != '{' || fastjson.ValidateBytes(b) != nil {
		return dst, errArgsNotJSON
	}
	return append(dst, b...), nil
}

// stopReason maps a chat finish_reason to a Messages stop_reason.
func stopReason(fr []byte) string {
	switch string(fr) {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn" // stop, and a missing or unknown reason
}

// chatUsage is a chat usage object's counts.
type chatUsage struct {
	prompt, cached, completion int64
	known                      bool
}

// readUsage reads a chat usage object (zero when absent).
func readUsage(u *fastjson.Value) chatUsage {
	if u.GetObject() == nil {
		return chatUsage{}
	}
	return chatUsage{
		prompt:     max(u.GetInt64("prompt_tokens"), 0),
		cached:     max(u.GetInt64("prompt_tokens_details", "cached_tokens"), 0),
		completion: max(u.GetInt64("completion_tokens"), 0),
		known:      true,
	}
}

// appendUsage writes the usage in Anthropic's terms: input_tokens without
// the cached tokens, which are cache_read_input_tokens (chat's
// prompt_tokens includes them); chat reports no cache writes.
func appendUsage(dst []byte, u chatUsage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, max(u.prompt-u.cached, 0), 10)
	dst = append(dst, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":`...)
	dst = strconv.AppendInt(dst, min(u.cached, u.prompt), 10)
	dst = append(dst, `,"output_tokens":`...)
	dst = strconv.AppendInt(dst, u.completion, 10)
	return append(dst, '}')
}

// appendMessageID writes "msg_" + the chat id (a random one when the
// upstream sent none).
func appendMessageID(dst []byte, id *fastjson.Value) []byte {
	dst = append(dst, `"msg_`...)
	n := len(dst)
	if out, ok := appendRawInner(dst, id); ok && len(out) > n {
		return append(out, '"')
	}
	dst = strconv.AppendUint(dst[:n], rand.Uint64(), 36)
	return append(dst, '"')
}
