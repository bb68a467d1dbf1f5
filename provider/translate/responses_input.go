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
func (r *respRequest) conversation(f *respFields) error {
	m := r.respMark()
	r.openMessage("system")
	switch k, empty := r.appendString(f.instructions); {
	case k == rawOther:
		return respInvalid("instructions must be a string")
	case k == rawNull || empty:
		r.rollback(m)
	default:
		r.dst = append(r.dst, '}')
	}
	in := f.input
	m = r.respMark()
	r.openMessage("user")
	var ok bool
	if r.dst, ok = appendRawString(r.dst, in); ok {
		r.dst = append(r.dst, '}')
		return nil
	}
	r.rollback(m)
	if in == nil || in.Type() != fastjson.TypeArray {
		return respInvalid("input must be a string or an array of items")
	}
	items, _ := in.Array()
	// Images in tool outputs follow the run of tool messages as one user
	// message: chat tool messages carry text only, and every tool result
	// must directly follow its call.
	imagesFrom := -1
	for i, v := range items {
		o := v.GetObject()
		if o == nil {
			return respItemErr(i, " must be an object")
		}
		var it respItem
		it.read(o)
		typ, err := it.itemType(i)
		if err != nil {
			return err
		}
		if typ == "item_reference" {
			return &Error{Status: 400, Code: respCodeUnsupported,
				Message: respAt("input", i) + ": item_reference is not supported by this model's provider, which keeps no items: send the item itself"}
		}
		kind := respKindOf(v, typ)
		if typ == "additional_tools" || typ == "tool_search_output" && kind == respKindOutput {
			r.additionalTools = true // its tools are written with the others
		}
		if imagesFrom >= 0 && (kind == respKindMessage || kind == respKindCall) {
			r.outputImages(items[imagesFrom:i])
			imagesFrom = -1
		}
		switch kind {
		case respKindMessage:
			err = r.message(&it, i)
		case respKindCall:
			err = r.call(&it, i, typ)
		case respKindOutput:
			if typ == "tool_search_output" {
				err = r.searchOutput(v, i)
				break
			}
			var images bool
			images, err = r.output(&it, i)
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

// appendString appends v by appendStringOrNull; empty reports that v is
// the string "".
func (r *respRequest) appendString(v *fastjson.Value) (kind int, empty bool) {
	n := len(r.dst)
	r.dst, kind = appendStringOrNull(r.dst, v)
	return kind, len(r.dst)-n == 2
}

// respItemErr is the error for input[i] with msg (".field must …").
func respItemErr(i int, msg string) error { return respInvalid(respAt("input", i) + msg) }

// respPartErr is the error for input[i].list[j] with msg.
func respPartErr(i int, list string, j int, msg string) error {
	return respInvalid(respAt(respAt("input", i)+"."+list, j) + msg)
}

// respItem holds the members of an input item the translation reads, each
// the first copy as fastjson's Get would find it, picked out in one pass.
type respItem struct {
	typ, role, content, callID, name, namespace, arguments, input, output *fastjson.Value
}

// read picks the members out of o.
func (it *respItem) read(o *fastjson.Object) {
	o.Visit(func(k []byte, v *fastjson.Value) {
		var slot **fastjson.Value
		switch string(k) {
		case "type":
			slot = &it.typ
		case "role":
			slot = &it.role
		case "content":
			slot = &it.content
		case "call_id":
			slot = &it.callID
		case "name":
			slot = &it.name
		case "namespace":
			slot = &it.namespace
		case "arguments":
			slot = &it.arguments
		case "input":
			slot = &it.input
		case "output":
			slot = &it.output
		default:
			return
		}
		if *slot == nil {
			*slot = v
		}
	})
}

// itemType returns input[i]'s type; an item with a role and no type is a
// message.
func (it *respItem) itemType(i int) (string, error) {
	t := it.typ
	if respNull(t) {
		if it.role != nil {
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
func (r *respRequest) message(it *respItem, i int) error {
	role, _ := respStr(it.role)
	content := it.content
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

// respContentParts returns a message's content parts; content is not a
// string (the callers copy a string first).
func respContentParts(content *fastjson.Value, i int) ([]*fastjson.Value, error) {
	if content == nil || content.Type() != fastjson.TypeArray {
		return nil, respItemErr(i, ".content must be a string or an array of parts")
	}
	parts, _ := content.Array()
	for j, p := range parts {
		if p.Type() != fastjson.TypeObject {
			return nil, respPartErr(i, "content", j, " must be an object")
		}
	}
	return parts, nil
}

// respPartTextKey returns the member holding a text-bearing part's text
// (input_text, output_text, and refusal when refusals count), or "" for
// another part.
func respPartTextKey(p *fastjson.Value, refusals bool) string {
	switch typ, _ := respStr(p.Get("type")); typ {
	case "input_text", "output_text":
		return "text"
	case "refusal":
		if refusals {
			return "refusal"
		}
	}
	return ""
}

// respPartTextErr is the error of a part whose text is not a string.
func respPartTextErr(i, j int, key string) error {
	return respPartErr(i, "content", j, "."+key+" must be a string")
}

// contentString writes a message of role up to its content, when that
// content is a string (isString), copied as sent; keepEmpty false leaves
// out a message whose content is "" (wrote false). When it writes nothing,
// an open assistant message stays open.
func (r *respRequest) contentString(role string, content *fastjson.Value, keepEmpty bool) (isString, wrote bool) {
	// Taken before openMessage closes an open assistant message, so
	// that writing nothing reopens it.
	before, n, asst := len(r.dst), r.n, r.asst
	r.openMessage(role)
	at := len(r.dst)
	var ok bool
	r.dst, ok = appendRawString(r.dst, content)
	if ok && (keepEmpty || len(r.dst)-at > 2) {
		return true, true
	}
	r.dst, r.n, r.asst = r.dst[:before], n, asst
	return ok, false
}

func (r *respRequest) userMessage(content *fastjson.Value, i int) error {
	if isString, _ := r.contentString("user", content, true); isString {
		r.dst = append(r.dst, '}')
		return nil
	}
	parts, err := respContentParts(content, i)
	if err != nil {
		return err
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
		if key := respPartTextKey(p, false); key != "" {
			r.dst = append(r.dst, `{"type":"text","text":`...)
			var ok bool
			if r.dst, ok = appendRawString(r.dst, p.Get(key)); !ok {
				return respPartTextErr(i, j, key)
			}
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
	n := len(r.dst)
	r.dst = append(r.dst, `{"type":"image_url","image_url":{"url":`...)
	var k int
	switch r.dst, k = appendStringOrNull(r.dst, p.Get("image_url")); k {
	case rawNull:
		r.dst = r.dst[:n]
		return false, nil
	case rawOther:
		r.dst = r.dst[:n]
		return false, respPartErr(i, "content", j, ".image_url must be a string")
	}
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
	if isString, wrote := r.contentString("assistant", content, false); isString {
		if wrote {
			r.asst = respAsstText
		}
		return nil
	}
	return r.joinedMessage("assistant", content, i, true, "")
}

// systemMessage writes a system or developer message's text parts joined
// by new lines (chat system messages carry text only).
func (r *respRequest) systemMessage(content *fastjson.Value, i int) error {
	if isString, _ := r.contentString("system", content, true); isString {
		r.dst = append(r.dst, '}')
		return nil
	}
	return r.joinedMessage("system", content, i, false, `\n`)
}

// joinedMessage writes a message of role whose text parts (and refusals,
// when refusals count) are joined by sep into one string. An assistant
// message is left open for the tool calls after it.
func (r *respRequest) joinedMessage(role string, content *fastjson.Value, i int, refusals bool, sep string) error {
	parts, err := respContentParts(content, i)
	if err != nil {
		return err
	}
	m := r.respMark()
	r.openMessage(role)
	r.dst = append(r.dst, '"')
	n := 0
	for j, p := range parts {
		key := respPartTextKey(p, refusals)
		if key == "" {
			continue
		}
		if n > 0 {
			r.dst = append(r.dst, sep...)
		}
		var ok bool
		if r.dst, ok = appendRawInner(r.dst, p.Get(key)); !ok {
			return respPartTextErr(i, j, key)
		}
		n++
	}
	if n == 0 {
		r.rollback(m)
		return nil
	}
	r.dst = append(r.dst, '"')
	if role == "assistant" {
		r.asst = respAsstText
	} else {
		r.dst = append(r.dst, '}')
	}
	return nil
}

// call writes a function_call, custom_tool_call or (client) tool_search_call
// as an assistant tool call, joining the assistant message (text or calls)
// right before it.
func (r *respRequest) call(it *respItem, i int, typ string) error {
	callID, ok := respStr(it.callID)
	if !ok || callID == "" {
		return respItemErr(i, ".call_id must be a non-empty string")
	}
	t, encode, err := r.callTool(it, i, typ)
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
	if encode {
		r.dst = jsonw.String(r.dst, byteconv.String(r.scratch))
	} else {
		r.dst = append(r.dst, r.scratch...)
	}
	r.dst = append(r.dst, "}}"...)
	return nil
}

// callTool returns the tool a call item names and leaves its chat
// arguments in r.scratch: a JSON string as sent, or (encode) a JSON text
// still to be written as a string.
func (r *respRequest) callTool(it *respItem, i int, typ string) (t respToolName, encode bool, err error) {
	if typ == "tool_search_call" {
		a := it.arguments
		var k int
		if r.scratch, k = appendStringOrNull(r.scratch[:0], a); k == rawString {
			return respToolSearch, false, nil // the arguments as a JSON text
		}
		if a == nil || a.Type() != fastjson.TypeObject {
			return respToolSearch, false, respItemErr(i, ".arguments must be an object")
		}
		var ok bool
		if r.scratch, r.numbers, ok = appendRespObject(r.scratch[:0], a, r.numbers); !ok {
			return respToolSearch, false, respItemErr(i, ".arguments holds a number that is not JSON")
		}
		return respToolSearch, true, nil
	}
	t.custom = typ == "custom_tool_call"
	var ok bool
	if t.name, ok = respStr(it.name); !ok || t.name == "" {
		return t, false, respItemErr(i, ".name must be a non-empty string")
	}
	if ns := it.namespace; !respNull(ns) {
		if t.ns, ok = respStr(ns); !ok {
			return t, false, respItemErr(i, ".namespace must be a string")
		}
	}
	if t.custom {
		// The custom tool's chat function takes {"input": "…"}.
		r.scratch = append(r.scratch[:0], `{"input":`...)
		if r.scratch, ok = appendRawString(r.scratch, it.input); !ok {
			return t, false, respItemErr(i, ".input must be a string")
		}
		r.scratch = append(r.scratch, '}')
		return t, true, nil
	}
	// A function's arguments string is kept as sent.
	var k int
	switch r.scratch, k = appendStringOrNull(r.scratch[:0], it.arguments); k {
	case rawNull:
		r.scratch = append(r.scratch, `"{}"`...)
	case rawOther:
		return t, false, respItemErr(i, ".arguments must be a string")
	}
	return t, false, nil
}

// output writes a function_call_output or custom_tool_call_output as a
// tool message: a string output, or the text parts of a list joined by
// new lines. It reports whether the list holds images (sent after the
// run of tool messages by outputImages).
func (r *respRequest) output(it *respItem, i int) (images bool, err error) {
	callID, ok := respStr(it.callID)
	if !ok || callID == "" {
		return false, respItemErr(i, ".call_id must be a non-empty string")
	}
	out := it.output
	r.openMessage("tool")
	if r.dst, ok = appendRawString(r.dst, out); !ok {
		if out == nil || out.Type() != fastjson.TypeArray {
			return false, respItemErr(i, ".output must be a string or an array of parts")
		}
		parts, _ := out.Array()
		r.dst = append(r.dst, '"')
		n := 0
		for j, p := range parts {
			if p.Type() != fastjson.TypeObject {
				return false, respPartErr(i, "output", j, " must be an object")
			}
			switch typ, _ := respStr(p.Get("type")); typ {
			case "input_text", "output_text":
				if n > 0 {
					r.dst = append(r.dst, `\n`...)
				}
				if r.dst, ok = appendRawInner(r.dst, p.Get("text")); !ok {
					return false, respPartErr(i, "output", j, ".text must be a string")
				}
				n++
			case "input_image":
				// Copied, not read, to see whether it is a string:
				// outputImages copies it as sent.
				var k int
				switch r.scratch, k = appendStringOrNull(r.scratch[:0], p.Get("image_url")); {
				case k == rawOther:
					return false, respPartErr(i, "output", j, ".image_url must be a string")
				case k == rawString && len(r.scratch) > 2:
					images = true
				}
			}
		}
		r.dst = append(r.dst, '"')
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
