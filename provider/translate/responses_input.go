package translate

// The conversation: instructions and input items become chat messages.

import (
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/internal/jsonw"
)

// respItemKind is what an input item becomes.
type respItemKind uint8

const (
	respKindSkip    respItemKind = iota // dropped: reasoning, hosted tool calls, unknown types
	respKindMessage                     // a chat message
	respKindCall                        // an assistant tool call
	respKindOutput                      // a tool message
)

func respKindOf(it *fastjson.Value, typ string) respItemKind {
	switch typ {
	case "message":
		return respKindMessage
	case "function_call", "custom_tool_call":
		return respKindCall
	case "function_call_output", "custom_tool_call_output":
		return respKindOutput
	case "tool_search_call":
		if respClientExecuted(it) {
			return respKindCall
		}
	case "tool_search_output":
		if respClientExecuted(it) {
			return respKindOutput
		}
	}
	return respKindSkip
}

// conversation writes instructions and input as chat messages.
func (r *respRequest) conversation(root *fastjson.Value) error {
	if v := root.Get("instructions"); !respNull(v) {
		s, ok := respStr(v)
		if !ok {
			return respInvalid("instructions must be a string")
		}
		if s != "" {
			r.openMessage("system")
			r.dst = jsonw.String(r.dst, s)
			r.dst = append(r.dst, '}')
		}
	}
	in := root.Get("input")
	if s, ok := respStr(in); ok {
		r.openMessage("user")
		r.dst = jsonw.String(r.dst, s)
		r.dst = append(r.dst, '}')
		return nil
	}
	if in == nil || in.Type() != fastjson.TypeArray {
		return respInvalid("input must be a string or an array of items")
	}
	items, _ := in.Array()
	// Images in tool outputs follow the run of tool messages as one user
	// message: chat tool messages carry text only, and every tool result
	// must directly follow its call.
	imagesFrom := -1
	for i, it := range items {
		if it.Type() != fastjson.TypeObject {
			return respItemErr(i, " must be an object")
		}
		typ, err := respItemType(it, i)
		if err != nil {
			return err
		}
		if typ == "item_reference" {
			return &Error{Status: 400, Code: respCodeUnsupported,
				Message: respAt("input", i) + ": item_reference is not supported by this model's provider, which keeps no items: send the item itself"}
		}
		kind := respKindOf(it, typ)
		if imagesFrom >= 0 && (kind == respKindMessage || kind == respKindCall) {
			r.outputImages(items[imagesFrom:i])
			imagesFrom = -1
		}
		switch kind {
		case respKindMessage:
			err = r.message(it, i)
		case respKindCall:
			err = r.call(it, i, typ)
		case respKindOutput:
			if typ == "tool_search_output" {
				err = r.searchOutput(it, i)
				break
			}
			var images bool
			images, err = r.output(it, i)
			if images && imagesFrom < 0 {
				imagesFrom = i
			}
		}
		if err != nil {
			return err
		}
	}
	if imagesFrom >= 0 {
		r.outputImages(items[imagesFrom:])
	}
	r.closeAssistant()
	if r.n == 0 {
		return respInvalid("input holds no message a chat model can read")
	}
	return nil
}

// respItemErr is the error for input[i] with msg (".field must …").
func respItemErr(i int, msg string) error { return respInvalid(respAt("input", i) + msg) }

// respPartErr is the error for input[i].list[j] with msg.
func respPartErr(i int, list string, j int, msg string) error {
	return respInvalid(respAt(respAt("input", i)+"."+list, j) + msg)
}

// respItemType returns an input item's type; an item with a role and no type
// is a message.
func respItemType(it *fastjson.Value, i int) (string, error) {
	t := it.Get("type")
	if respNull(t) {
		if it.Get("role") != nil {
			return "message", nil
		}
		return "", respItemErr(i, " needs a type")
	}
	typ, ok := respStr(t)
	if !ok {
		return "", respItemErr(i, ".type must be a string")
	}
	return typ, nil
}

// openMessage closes an open assistant message and opens a message of
// role up to its content's value: {"role":"…","content":
func (r *respRequest) openMessage(role string) {
	r.closeAssistant()
	if r.n > 0 {
		r.dst = append(r.dst, ',')
	}
	r.n++
	r.dst = append(r.dst, `{"role":"`...)
	r.dst = append(r.dst, role...)
	r.dst = append(r.dst, `","content":`...)
}

func (r *respRequest) closeAssistant() {
	switch r.asst {
	case respAsstText:
		r.dst = append(r.dst, '}')
	case respAsstCalls:
		r.dst = append(r.dst, "]}"...)
	}
	r.asst = respAsstNone
}

// respMark and rollback undo a message that turned out to have no content.
// respMark closes an open assistant message first, so a rollback cannot undo
// its closing.
type respMark struct{ len, n int }

func (r *respRequest) respMark() respMark {
	r.closeAssistant()
	return respMark{len(r.dst), r.n}
}

func (r *respRequest) rollback(m respMark) { r.dst, r.n = r.dst[:m.len], m.n }

// message writes a message item: developer becomes system (the chat
// providers behind this translation know system only).
func (r *respRequest) message(it *fastjson.Value, i int) error {
	role, _ := respStr(it.Get("role"))
	content := it.Get("content")
	switch role {
	case "user":
		return r.userMessage(content, i)
	case "assistant":
		return r.assistantMessage(content, i)
	case "system", "developer":
		return r.systemMessage(content, i)
	}
	return respItemErr(i, ".role must be user, assistant, system or developer")
}

// respContentParts returns a message's content parts, or its string content.
func respContentParts(content *fastjson.Value, i int) (parts []*fastjson.Value, s string, isString bool, err error) {
	if s, ok := respStr(content); ok {
		return nil, s, true, nil
	}
	if content == nil || content.Type() != fastjson.TypeArray {
		return nil, "", false, respItemErr(i, ".content must be a string or an array of parts")
	}
	parts, _ = content.Array()
	for j, p := range parts {
		if p.Type() != fastjson.TypeObject {
			return nil, "", false, respPartErr(i, "content", j, " must be an object")
		}
	}
	return parts, "", false, nil
}

// respPartText returns a text-bearing part's text (input_text, output_text,
// and refusal when refusals count) and whether the part is one.
func respPartText(p *fastjson.Value, refusals bool, i, j int) (string, bool, error) {
	typ, _ := respStr(p.Get("type"))
	key := "text"
	switch typ {
	case "input_text", "output_text":
	case "refusal":
		if !refusals {
			return "", false, nil
		}
		key = "refusal"
	default:
		return "", false, nil
	}
	s, ok := respStr(p.Get(key))
	if !ok {
		return "", false, respPartErr(i, "content", j, "."+key+" must be a string")
	}
	return s, true, nil
}

func (r *respRequest) userMessage(content *fastjson.Value, i int) error {
	parts, s, isString, err := respContentParts(content, i)
	if err != nil {
		return err
	}
	if isString {
		r.openMessage("user")
		r.dst = jsonw.String(r.dst, s)
		r.dst = append(r.dst, '}')
		return nil
	}
	m := r.respMark()
	r.openMessage("user")
	r.dst = append(r.dst, '[')
	n := 0
	for j, p := range parts {
		before := len(r.dst)
		if n > 0 {
			r.dst = append(r.dst, ',')
		}
		if text, ok, err := respPartText(p, false, i, j); err != nil {
			return err
		} else if ok {
			r.dst = append(r.dst, `{"type":"text","text":`...)
			r.dst = jsonw.String(r.dst, text)
			r.dst = append(r.dst, '}')
			n++
			continue
		}
		if typ, _ := respStr(p.Get("type")); typ == "input_image" {
			wrote, err := r.imagePart(p, i, j)
			if err != nil {
				return err
			}
			if wrote {
				n++
				continue
			}
		}
		// input_file, an image by file_id, unknown parts: dropped.
		r.dst = r.dst[:before]
	}
	if n == 0 {
		r.rollback(m)
		return nil
	}
	r.dst = append(r.dst, "]}"...)
	return nil
}

// imagePart writes an input_image given by URL (http(s) or data:) as an
// image_url part; one given only by file_id has no chat counterpart.
// i and j locate the part (input[i].content[j]) for the error.
func (r *respRequest) imagePart(p *fastjson.Value, i, j int) (bool, error) {
	u := p.Get("image_url")
	if respNull(u) {
		return false, nil
	}
	url, ok := respStr(u)
	if !ok {
		return false, respPartErr(i, "content", j, ".image_url must be a string")
	}
	r.dst = append(r.dst, `{"type":"image_url","image_url":{"url":`...)
	r.dst = jsonw.String(r.dst, url)
	switch d, _ := respStr(p.Get("detail")); d {
	case "low", "high", "auto":
		r.dst = appendRespKeyString(r.dst, "detail", d)
	}
	r.dst = append(r.dst, "}}"...)
	return true, nil
}

// assistantMessage writes an assistant message's text (output_text parts
// and refusals, joined) and leaves it open for the tool calls after it.
func (r *respRequest) assistantMessage(content *fastjson.Value, i int) error {
	parts, s, isString, err := respContentParts(content, i)
	if err != nil {
		return err
	}
	if isString {
		if s != "" { // an empty one would be an empty chat message
			r.openMessage("assistant")
			r.dst = jsonw.String(r.dst, s)
			r.asst = respAsstText
		}
		return nil
	}
	m := r.respMark()
	r.openMessage("assistant")
	r.dst = append(r.dst, '"')
	n := 0
	for j, p := range parts {
		text, ok, err := respPartText(p, true, i, j)
		if err != nil {
			return err
		}
		if ok {
			r.dst = appendRespEscaped(r.dst, text)
			n++
		}
	}
	if n == 0 {
		r.rollback(m)
		return nil
	}
	r.dst = append(r.dst, '"')
	r.asst = respAsstText
	return nil
}

// systemMessage writes a system or developer message's text parts joined
// by new lines (chat system messages carry text only).
func (r *respRequest) systemMessage(content *fastjson.Value, i int) error {
	parts, s, isString, err := respContentParts(content, i)
	if err != nil {
		return err
	}
	if isString {
		r.openMessage("system")
		r.dst = jsonw.String(r.dst, s)
		r.dst = append(r.dst, '}')
		return nil
	}
	m := r.respMark()
	r.openMessage("system")
	r.dst = append(r.dst, '"')
	n := 0
	for j, p := range parts {
		text, ok, err := respPartText(p, false, i, j)
		if err != nil {
			return err
		}
		if ok {
			if n > 0 {
				r.dst = append(r.dst, `\n`...)
			}
			r.dst = appendRespEscaped(r.dst, text)
			n++
		}
	}
	if n == 0 {
		r.rollback(m)
		return nil
	}
	r.dst = append(r.dst, `"}`...)
	return nil
}

// call writes a function_call, custom_tool_call or (client) tool_search_call
// as an assistant tool call, joining the assistant message (text or calls)
// right before it.
func (r *respRequest) call(it *fastjson.Value, i int, typ string) error {
	callID, ok := respStr(it.Get("call_id"))
	if !ok || callID == "" {
		return respItemErr(i, ".call_id must be a non-empty string")
	}
	t, args, err := r.callTool(it, i, typ)
	if err != nil {
		return err
	}
	switch r.asst {
	case respAsstText:
		r.dst = append(r.dst, `,"tool_calls":[`...)
	case respAsstCalls:
		r.dst = append(r.dst, ',')
	default:
		r.openMessage("assistant")
		r.dst = append(r.dst, `null,"tool_calls":[`...)
	}
	r.asst = respAsstCalls
	r.dst = append(r.dst, `{"id":`...)
	r.dst = jsonw.String(r.dst, callID)
	r.dst = append(r.dst, `,"type":"function","function":{"name":`...)
	r.dst = appendRespChatToolNameJSON(r.dst, t)
	r.dst = append(r.dst, `,"arguments":`...)
	r.dst = jsonw.String(r.dst, args)
	r.dst = append(r.dst, "}}"...)
	return nil
}

// callTool returns the tool a call item names and its chat arguments (a
// view of the item or of r.scratch).
func (r *respRequest) callTool(it *fastjson.Value, i int, typ string) (respToolName, string, error) {
	if typ == "tool_search_call" {
		a := it.Get("arguments")
		if s, ok := respStr(a); ok { // the arguments as a JSON text
			return respToolSearch, s, nil
		}
		if a == nil || a.Type() != fastjson.TypeObject {
			return respToolSearch, "", respItemErr(i, ".arguments must be an object")
		}
		var ok bool
		if r.scratch, ok = appendRespValue(r.scratch[:0], a); !ok {
			return respToolSearch, "", respItemErr(i, ".arguments holds a number that is not JSON")
		}
		return respToolSearch, byteconv.String(r.scratch), nil
	}
	t := respToolName{custom: typ == "custom_tool_call"}
	var ok bool
	if t.name, ok = respStr(it.Get("name")); !ok || t.name == "" {
		return t, "", respItemErr(i, ".name must be a non-empty string")
	}
	if ns := it.Get("namespace"); !respNull(ns) {
		if t.ns, ok = respStr(ns); !ok {
			return t, "", respItemErr(i, ".namespace must be a string")
		}
	}
	if t.custom {
		input, ok := respStr(it.Get("input"))
		if !ok {
			return t, "", respItemErr(i, ".input must be a string")
		}
		// The custom tool's chat function takes {"input": "…"}.
		r.scratch = append(r.scratch[:0], `{"input":`...)
		r.scratch = jsonw.String(r.scratch, input)
		r.scratch = append(r.scratch, '}')
		return t, byteconv.String(r.scratch), nil
	}
	a := it.Get("arguments")
	if respNull(a) {
		return t, "{}", nil
	}
	args, ok := respStr(a)
	if !ok {
		return t, "", respItemErr(i, ".arguments must be a string")
	}
	return t, args, nil
}

// output writes a function_call_output or custom_tool_call_output as a
// tool message: a string output, or the text parts of a list joined by
// new lines. It reports whether the list holds images (sent after the
// run of tool messages by outputImages).
func (r *respRequest) output(it *fastjson.Value, i int) (images bool, err error) {
	callID, ok := respStr(it.Get("call_id"))
	if !ok || callID == "" {
		return false, respItemErr(i, ".call_id must be a non-empty string")
	}
	out := it.Get("output")
	r.openMessage("tool")
	if s, ok := respStr(out); ok {
		r.dst = jsonw.String(r.dst, s)
	} else if out != nil && out.Type() == fastjson.TypeArray {
		parts, _ := out.Array()
		r.dst = append(r.dst, '"')
		n := 0
		for j, p := range parts {
			if p.Type() != fastjson.TypeObject {
				return false, respPartErr(i, "output", j, " must be an object")
			}
			switch typ, _ := respStr(p.Get("type")); typ {
			case "input_text", "output_text":
				s, ok := respStr(p.Get("text"))
				if !ok {
					return false, respPartErr(i, "output", j, ".text must be a string")
				}
				if n > 0 {
					r.dst = append(r.dst, `\n`...)
				}
				r.dst = appendRespEscaped(r.dst, s)
				n++
			case "input_image":
				u := p.Get("image_url")
				if respNull(u) {
					continue // by file_id: no chat counterpart
				}
				if s, ok := respStr(u); !ok {
					return false, respPartErr(i, "output", j, ".image_url must be a string")
				} else if s != "" {
					images = true
				}
			}
		}
		r.dst = append(r.dst, '"')
	} else {
		return false, respItemErr(i, ".output must be a string or an array of parts")
	}
	r.dst = append(r.dst, `,"tool_call_id":`...)
	r.dst = jsonw.String(r.dst, callID)
	r.dst = append(r.dst, '}')
	return images, nil
}

// outputImages writes the images of the tool outputs among items as one
// user message.
func (r *respRequest) outputImages(items []*fastjson.Value) {
	m := r.respMark()
	r.openMessage("user")
	r.dst = append(r.dst, '[')
	n := 0
	for _, it := range items {
		if typ, _ := respStr(it.Get("type")); typ != "function_call_output" && typ != "custom_tool_call_output" {
			continue
		}
		parts, _ := it.Get("output").Array()
		for _, p := range parts {
			if typ, _ := respStr(p.Get("type")); typ != "input_image" {
				continue
			}
			before := len(r.dst)
			if n > 0 {
				r.dst = append(r.dst, ',')
			}
			if wrote, err := r.imagePart(p, 0, 0); err != nil || !wrote {
				r.dst = r.dst[:before]
				continue
			}
			n++
		}
	}
	if n == 0 {
		r.rollback(m)
		return
	}
	r.dst = append(r.dst, "]}"...)
}
