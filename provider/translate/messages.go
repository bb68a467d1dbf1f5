package translate

import (
	"sync"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
)

// The Anthropic Messages API ⇄ OpenAI chat completions (docs/providers.md,
// Translation). MessagesToChat turns a client's Messages request into the
// chat request a member's chat adapter sends; ChatToMessages (answer.go)
// and NewMessagesStream (messages_stream.go) turn the chat answer back.

// MessagesToChat appends to dst the chat completions request for the
// Messages request body: system, messages, tools and the sampling fields
// mapped; the fields chat has no counterpart for dropped (never an error).
// dropped names the tool types left out (server tools such as
// web_search_20250305 that only Anthropic runs), nil when none. A body the
// Messages API itself would refuse (messages missing, a block without its
// required fields, a field of the wrong type) is an *Error; dst then holds
// a partial request and must be discarded.
func MessagesToChat(dst, body []byte, o Options) (out []byte, dropped []string, err error) {
	p := msgParsers.Get()
	defer msgParsers.Put(p)
	root, perr := p.ParseBytes(body)
	if perr != nil {
		return dst, nil, pathError(loc{}, "the body is not valid JSON")
	}
	top := root.GetObject()
	if top == nil {
		return dst, nil, pathError(loc{}, "the body is not a JSON object")
	}
	var f msgFields
	if err := f.read(top); err != nil {
		return dst, nil, err
	}
	w := msgWriter{o: o}
	dst = append(dst, `{"model":`...)
	dst = appendString(dst, o.Model)
	dst = append(dst, `,"messages":[`...)
	if dst, err = w.system(dst, f.system, rootLoc("system")); err != nil {
		return dst, nil, err
	}
	if dst, err = w.messages(dst, f.messages); err != nil {
		return dst, nil, err
	}
	dst = append(dst, ']')
	if dst, err = w.sampling(dst, &f); err != nil {
		return dst, nil, err
	}
	if o.Stream {
		dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	if dst, dropped, err = w.tools(dst, f.tools, f.toolChoice); err != nil {
		return dst, nil, err
	}
	return append(dst, '}'), dropped, nil
}

// msgFields are the top-level members the translation reads; every other
// member (thinking, top_k, service_tier, container, mcp_servers, …) is
// dropped.
type msgFields struct {
	messages, system, maxTokens, stop, temperature, topP, metadata, tools, toolChoice *fastjson.Value
}

// read picks the members out of top. A member given twice is refused: the
// Messages API keeps the last copy, fastjson the first, and a chain may
// hold both kinds of member.
func (f *msgFields) read(top *fastjson.Object) error {
	dup := ""
	top.Visit(func(k []byte, v *fastjson.Value) {
		var slot **fastjson.Value
		switch string(k) {
		case "messages":
			slot = &f.messages
		case "system":
			slot = &f.system
		case "max_tokens":
			slot = &f.maxTokens
		case "stop_sequences":
			slot = &f.stop
		case "temperature":
			slot = &f.temperature
		case "top_p":
			slot = &f.topP
		case "metadata":
			slot = &f.metadata
		case "tools":
			slot = &f.tools
		case "tool_choice":
			slot = &f.toolChoice
		default:
			return
		}
		if *slot != nil && dup == "" {
			dup = string(k)
		}
		*slot = v
	})
	if dup != "" {
		return pathError(rootLoc(dup), "the member is given more than once")
	}
	if f.messages == nil || f.messages.GetArray() == nil && f.messages.Type() != fastjson.TypeArray {
		return pathError(rootLoc("messages"), "an array of messages is required")
	}
	return nil
}

// msgWriter writes the chat request; msgs counts the chat messages written
// (for the commas between them).
type msgWriter struct {
	o    Options
	msgs int
}

// open starts a chat message with role.
func (w *msgWriter) open(dst []byte, role string) []byte {
	if w.msgs > 0 {
		dst = append(dst, ',')
	}
	w.msgs++
	dst = append(dst, `{"role":"`...)
	dst = append(dst, role...)
	return append(dst, '"')
}

// mark and undo take back a message that turned out empty.
type mark struct{ n, msgs int }

func (w *msgWriter) mark(dst []byte) mark { return mark{len(dst), w.msgs} }

func (w *msgWriter) undo(dst []byte, m mark) []byte {
	w.msgs = m.msgs
	return dst[:m.n]
}

// system writes a system prompt, a string or text blocks (joined by a
// blank line; cache_control and citations dropped), as one system message:
// the top-level system, or a system message of the conversation at path.
func (w *msgWriter) system(dst []byte, v *fastjson.Value, path loc) ([]byte, error) {
	m := w.mark(dst)
	dst = w.open(dst, "system")
	dst = append(dst, `,"content":`...)
	switch out, k := appendStringOrNull(dst, v); k {
	case rawString:
		return append(out, '}'), nil
	case rawNull:
		return w.undo(dst, m), nil
	}
	blocks := v.GetArray()
	if blocks == nil && v.Type() != fastjson.TypeArray {
		return dst, pathError(path, "must be a string or an array of text blocks")
	}
	dst = append(dst, '"')
	n := 0
	for i, b := range blocks {
		typ, err := blockType(b, path.index(i))
		if err != nil {
			return dst, err
		}
		if typ != "text" {
			continue // only text blocks are allowed here; anything else is dropped
		}
		if n > 0 {
			dst = append(dst, `\n\n`...)
		}
		var ok bool
		if dst, ok = appendRawInner(dst, b.Get("text")); !ok {
			return dst, pathError(path.index(i), "a text block needs a string text")
		}
		n++
	}
	if n == 0 {
		return w.undo(dst, m), nil
	}
	return append(dst, `"}`...), nil
}

// blockType returns the type of the content block b at path.
func blockType(b *fastjson.Value, path loc) (string, error) {
	if b.GetObject() == nil {
		return "", pathError(path, "a content block must be an object")
	}
	typ, ok := str(b.Get("type"))
	if !ok {
		return "", pathError(path, "a content block needs a string type")
	}
	return byteconv.String(typ), nil // views the parser's memory: compared, not kept
}

// messages writes the conversation: user, assistant and system messages.
func (w *msgWriter) messages(dst []byte, v *fastjson.Value) ([]byte, error) {
	var err error
	for i, m := range v.GetArray() {
		path := rootLoc("messages").index(i)
		if m.GetObject() == nil {
			return dst, pathError(path, "a message must be an object")
		}
		role, _ := str(m.Get("role"))
		content := m.Get("content")
		if content == nil {
			return dst, pathError(path, "a message needs content")
		}
		switch string(role) {
		case "user":
			dst, err = w.user(dst, content, path.key("content"))
		case "assistant":
			dst, err = w.assistant(dst, content, path.key("content"))
		case "system":
			// A mid-conversation system message (Claude Code sends one
			// after the first user turn): a chat system message in place.
			dst, err = w.system(dst, content, path.key("content"))
		default:
			return dst, pathError(path.key("role"), `must be "user", "assistant" or "system"`)
		}
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// user writes a user turn: its tool_result blocks first, as tool messages
// in order (chat wants them right after the assistant's tool calls), then
// a user message with the rest, the images of those tool results first
// (a chat tool message holds text only).
func (w *msgWriter) user(dst []byte, content *fastjson.Value, path loc) ([]byte, error) {
	m := w.mark(dst)
	dst = w.open(dst, "user")
	dst = append(dst, `,"content":`...)
	if out, ok := appendRawString(dst, content); ok {
		return append(out, '}'), nil
	}
	dst = w.undo(dst, m) // blocks: tool messages come first
	blocks := content.GetArray()
	if blocks == nil && content.Type() != fastjson.TypeArray {
		return dst, pathError(path, "must be a string or an array of content blocks")
	}
	texts, others, images := 0, 0, 0
	var err error
	for i, b := range blocks {
		typ, terr := blockType(b, path.index(i))
		if terr != nil {
			return dst, terr
		}
		switch typ {
		case "tool_result":
			var n int
			if dst, n, err = w.toolResult(dst, b, path.index(i)); err != nil {
				return dst, err
			}
			images += n
		case "text":
			texts++
		case "image", "document":
			others++
		}
	}
	if texts+others+images == 0 {
		return dst, nil
	}
	m = w.mark(dst)
	dst = w.open(dst, "user")
	dst = append(dst, `,"content":`...)
	if texts == 1 && others+images == 0 {
		// One text block: a plain string, as most clients send.
		for i, b := range blocks {
			if typ, _ := str(b.Get("type")); string(typ) == "text" {
				var ok bool
				if dst, ok = appendRawString(dst, b.Get("text")); !ok {
					return dst, pathError(path.index(i), "a text block needs a string text")
				}
			}
		}
		return append(dst, '}'), nil
	}
	dst = append(dst, '[')
	parts := 0
	if images > 0 {
		for i, b := range blocks {
			if typ, _ := str(b.Get("type")); string(typ) == "tool_result" {
				for j, c := range b.GetArray("content") {
					if typ, _ := str(c.Get("type")); string(typ) == "image" {
						if dst, err = w.image(dst, &parts, c, path.index(i).key("content").index(j)); err != nil {
							return dst, err
						}
					}
				}
			}
		}
	}
	for i, b := range blocks {
		typ, _ := str(b.Get("type"))
		switch string(typ) {
		case "text":
			dst, err = w.text(dst, &parts, b, path.index(i))
		case "image":
			dst, err = w.image(dst, &parts, b, path.index(i))
		case "document":
			dst, err = w.document(dst, &parts, b, path.index(i))
		}
		if err != nil {
			return dst, err
		}
	}
	if parts == 0 {
		return w.undo(dst, m), nil
	}
	return append(dst, "]}"...), nil
}

// part starts one content part of a user message.
func part(dst []byte, parts *int) []byte {
	if *parts > 0 {
		dst = append(dst, ',')
	}
	*parts++
	return dst
}

// text writes a text block as a text part (cache_control and citations
// dropped).
func (w *msgWriter) text(dst []byte, parts *int, b *fastjson.Value, path loc) ([]byte, error) {
	n, p := len(dst), *parts
	dst = append(part(dst, parts), `{"type":"text","text":`...)
	dst, ok := appendRawString(dst, b.Get("text"))
	if !ok {
		*parts = p
		return dst[:n], pathError(path, "a text block needs a string text")
	}
	return append(dst, '}'), nil
}

// image writes an image block as an image_url part: a data: URL for base64
// data, the URL itself for a url source. A file source (an id of
// Anthropic's Files API, meaningless elsewhere) is dropped.
func (w *msgWriter) image(dst []byte, parts *int, b *fastjson.Value, path loc) ([]byte, error) {
	src := b.Get("source")
	if src.GetObject() == nil {
		return dst, pathError(path, "an image block needs a source object")
	}
	styp, _ := str(src.Get("type"))
	n, p := len(dst), *parts
	var ok bool
	switch string(styp) {
	case "base64":
		dst = append(part(dst, parts), `{"type":"image_url","image_url":{"url":"data:`...)
		if dst, ok = appendRawInner(dst, src.Get("media_type")); ok {
			dst = append(dst, ";base64,"...)
			dst, ok = appendRawInner(dst, src.Get("data"))
		}
		if !ok {
			*parts = p
			return dst[:n], pathError(path.key("source"), "a base64 source needs string media_type and data")
		}
		return append(dst, `"}}`...), nil
	case "url":
		dst = append(part(dst, parts), `{"type":"image_url","image_url":{"url":`...)
		if dst, ok = appendRawString(dst, src.Get("url")); !ok {
			*parts = p
			return dst[:n], pathError(path.key("source"), "a url source needs a string url")
		}
		return append(dst, "}}"...), nil
	}
	return dst, nil
}

// document writes a document block: plain text (a text source) as a text
// part, the text and images of a content source as parts, a PDF as a file
// part on a member with file input (Options.FileInput). Any other document
// is dropped.
func (w *msgWriter) document(dst []byte, parts *int, b *fastjson.Value, path loc) ([]byte, error) {
	src := b.Get("source")
	if src.GetObject() == nil {
		return dst, pathError(path, "a document block needs a source object")
	}
	styp, _ := str(src.Get("type"))
	n, p := len(dst), *parts
	var ok bool
	switch string(styp) {
	case "text":
		dst = append(part(dst, parts), `{"type":"text","text":`...)
		if dst, ok = appendRawString(dst, src.Get("data")); !ok {
			*parts = p
			return dst[:n], pathError(path.key("source"), "a text source needs string data")
		}
		return append(dst, '}'), nil
	case "content":
		c := src.Get("content")
		if _, ok := appendRawString(nil, c); ok {
			dst = append(part(dst, parts), `{"type":"text","text":`...)
			dst, _ = appendRawString(dst, c)
			return append(dst, '}'), nil
		}
		var err error
		for i, cb := range c.GetArray() {
			typ, terr := blockType(cb, path.key("source").key("content").index(i))
			if terr != nil {
				return dst, terr
			}
			switch typ {
			case "text":
				dst, err = w.text(dst, parts, cb, path.key("source").key("content").index(i))
			case "image":
				dst, err = w.image(dst, parts, cb, path.key("source").key("content").index(i))
			}
			if err != nil {
				return dst, err
			}
		}
		return dst, nil
	case "base64":
		mt, _ := str(src.Get("media_type"))
		if !w.o.FileInput || string(mt) != "application/pdf" {
			return dst, nil
		}
		dst = append(part(dst, parts), `{"type":"file","file":{"filename":`...)
		if dst, ok = appendRawString(dst, b.Get("title")); !ok {
			dst = append(dst, `"document.pdf"`...)
		}
		dst = append(dst, `,"file_data":"data:application/pdf;base64,`...)
		if dst, ok = appendRawInner(dst, src.Get("data")); !ok {
			*parts = p
			return dst[:n], pathError(path.key("source"), "a base64 source needs string data")
		}
		return append(dst, `"}}`...), nil
	}
	return dst, nil
}

// toolResult writes a tool_result block as a tool message: its content a
// string, or its text blocks joined by a newline. It returns how many image
// blocks the content holds (written into the user message that follows).
// is_error and cache_control are dropped.
func (w *msgWriter) toolResult(dst []byte, b *fastjson.Value, path loc) ([]byte, int, error) {
	dst = w.open(dst, "tool")
	dst = append(dst, `,"tool_call_id":`...)
	dst, ok := appendRawString(dst, b.Get("tool_use_id"))
	if !ok {
		return dst, 0, pathError(path, "a tool_result block needs a string tool_use_id")
	}
	dst = append(dst, `,"content":`...)
	c := b.Get("content")
	switch out, k := appendStringOrNull(dst, c); k {
	case rawString:
		return append(out, '}'), 0, nil
	case rawNull:
		return append(dst, `""}`...), 0, nil
	}
	blocks := c.GetArray()
	if blocks == nil && c.Type() != fastjson.TypeArray {
		return dst, 0, pathError(path.key("content"), "must be a string or an array of content blocks")
	}
	dst = append(dst, '"')
	texts, images := 0, 0
	for i, cb := range blocks {
		typ, err := blockType(cb, path.key("content").index(i))
		if err != nil {
			return dst, 0, err
		}
		switch typ {
		case "text":
			if texts > 0 {
				dst = append(dst, `\n`...)
			}
			if dst, ok = appendRawInner(dst, cb.Get("text")); !ok {
				return dst, 0, pathError(path.key("content").index(i), "a text block needs a string text")
			}
			texts++
		case "image":
			images++
		}
	}
	return append(dst, `"}`...), images, nil
}

// assistant writes an assistant turn: its text blocks joined as the
// content, its tool_use blocks as tool_calls (ids kept). Thinking and
// redacted_thinking blocks, server tool blocks and unknown blocks are
// dropped; a turn left empty is not written.
func (w *msgWriter) assistant(dst []byte, content *fastjson.Value, path loc) ([]byte, error) {
	m := w.mark(dst)
	dst = w.open(dst, "assistant")
	dst = append(dst, `,"content":`...)
	if out, ok := appendRawString(dst, content); ok {
		return append(out, '}'), nil
	}
	blocks := content.GetArray()
	if blocks == nil && content.Type() != fastjson.TypeArray {
		return dst, pathError(path, "must be a string or an array of content blocks")
	}
	texts, uses := 0, 0
	for i, b := range blocks {
		typ, err := blockType(b, path.index(i))
		if err != nil {
			return dst, err
		}
		switch typ {
		case "text":
			texts++
		case "tool_use":
			uses++
		}
	}
	if texts+uses == 0 {
		return w.undo(dst, m), nil
	}
	if texts == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '"')
		for i, b := range blocks {
			if typ, _ := str(b.Get("type")); string(typ) == "text" {
				var ok bool
				if dst, ok = appendRawInner(dst, b.Get("text")); !ok {
					return dst, pathError(path.index(i), "a text block needs a string text")
				}
			}
		}
		dst = append(dst, '"')
	}
	if uses > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		n := 0
		for i, b := range blocks {
			if typ, _ := str(b.Get("type")); string(typ) != "tool_use" {
				continue
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			var err error
			if dst, err = toolCall(dst, b, path.index(i)); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// scratchPool holds the buffers a tool_use input is serialized into before
// it is written as the arguments string.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledScratch is the largest scratch buffer kept for reuse.
const maxPooledScratch = 64 << 10

// toolCall writes a tool_use block as a chat tool call, its input as the
// arguments string.
func toolCall(dst []byte, b *fastjson.Value, path loc) ([]byte, error) {
	dst = append(dst, `{"id":`...)
	dst, ok := appendRawString(dst, b.Get("id"))
	if !ok {
		return dst, pathError(path, "a tool_use block needs a string id")
	}
	dst = append(dst, `,"type":"function","function":{"name":`...)
	if dst, ok = appendRawString(dst, b.Get("name")); !ok {
		return dst, pathError(path, "a tool_use block needs a string name")
	}
	dst = append(dst, `,"arguments":`...)
	in := b.Get("input")
	switch {
	case isNull(in):
		dst = append(dst, `"{}"`...)
	case in.GetObject() == nil:
		return dst, pathError(path.key("input"), "must be an object")
	default:
		buf := scratchPool.Get().(*[]byte)
		*buf = in.MarshalTo((*buf)[:0])
		dst = appendString(dst, *buf)
		if cap(*buf) <= maxPooledScratch {
			scratchPool.Put(buf)
		}
	}
	return append(dst, "}}"...), nil
}

// sampling writes the output limit, stop sequences, temperature, top_p and
// the user (metadata.user_id). top_k has no chat counterpart: dropped.
func (w *msgWriter) sampling(dst []byte, f *msgFields) ([]byte, error) {
	if !isNull(f.maxTokens) {
		if !isNumber(f.maxTokens) {
			return dst, pathError(rootLoc("max_tokens"), "must be a number")
		}
		if w.o.MaxCompletionTokens {
			dst = append(dst, `,"max_completion_tokens":`...)
		} else {
			dst = append(dst, `,"max_tokens":`...)
		}
		dst = f.maxTokens.MarshalTo(dst)
	}
	if !isNull(f.stop) {
		seqs := f.stop.GetArray()
		if seqs == nil && f.stop.Type() != fastjson.TypeArray {
			return dst, pathError(rootLoc("stop_sequences"), "must be an array of strings")
		}
		if len(seqs) > 0 {
			dst = append(dst, `,"stop":[`...)
			for i, s := range seqs {
				if i > 0 {
					dst = append(dst, ',')
				}
				var ok bool
				if dst, ok = appendRawString(dst, s); !ok {
					return dst, pathError(rootLoc("stop_sequences").index(i), "must be a string")
				}
			}
			dst = append(dst, ']')
		}
	}
	for _, n := range [...]struct {
		v    *fastjson.Value
		name string
	}{{f.temperature, "temperature"}, {f.topP, "top_p"}} {
		if isNull(n.v) {
			continue
		}
		if !isNumber(n.v) {
			return dst, pathError(rootLoc(n.name), "must be a number")
		}
		dst = append(dst, `,"`...)
		dst = append(dst, n.name...)
		dst = append(dst, `":`...)
		dst = n.v.MarshalTo(dst)
	}
	if !isNull(f.metadata) {
		if f.metadata.GetObject() == nil {
			return dst, pathError(rootLoc("metadata"), "must be an object")
		}
		n := len(dst)
		switch out, k := appendStringOrNull(append(dst, `,"user":`...), f.metadata.Get("user_id")); k {
		case rawString:
			dst = out
		case rawOther:
			return dst[:n], pathError(rootLoc("metadata").key("user_id"), "must be a string")
		}
	}
	return dst, nil
}

// tools writes the client tools as function tools and the tool choice.
// Tools of another type (Anthropic's server and built-in tools: web
// search, code execution, bash, text editor, computer use…) are dropped
// and named in dropped.
func (w *msgWriter) tools(dst []byte, tools, choice *fastjson.Value) (out []byte, dropped []string, err error) {
	n := 0
	if !isNull(tools) {
		list := tools.GetArray()
		if list == nil && tools.Type() != fastjson.TypeArray {
			return dst, nil, pathError(rootLoc("tools"), "must be an array")
		}
		for i, t := range list {
			path := rootLoc("tools").index(i)
			if t.GetObject() == nil {
				return dst, nil, pathError(path, "a tool must be an object")
			}
			if typ := t.Get("type"); !isNull(typ) {
				s, ok := str(typ)
				if !ok {
					return dst, nil, pathError(path.key("type"), "must be a string")
				}
				if string(s) != "custom" {
					dropped = appendDroppedName(dropped, s)
					continue
				}
			}
			if n == 0 {
				dst = append(dst, `,"tools":[`...)
			} else {
				dst = append(dst, ',')
			}
			n++
			dst = append(dst, `{"type":"function","function":{"name":`...)
			var ok bool
			if dst, ok = appendRawString(dst, t.Get("name")); !ok {
				return dst, nil, pathError(path, "a tool needs a string name")
			}
			n := len(dst)
			switch out, k := appendStringOrNull(append(dst, `,"description":`...), t.Get("description")); k {
			case rawString:
				dst = out
			case rawNull:
				dst = dst[:n]
			default:
				return dst, nil, pathError(path.key("description"), "must be a string")
			}
			dst = append(dst, `,"parameters":`...)
			switch s := t.Get("input_schema"); {
			case isNull(s):
				dst = append(dst, `{"type":"object","properties":{}}`...)
			case s.GetObject() == nil:
				return dst, nil, pathError(path.key("input_schema"), "must be an object")
			default:
				dst = s.MarshalTo(dst)
			}
			dst = append(dst, "}}"...)
		}
		if n > 0 {
			dst = append(dst, ']')
		}
	}
	if isNull(choice) {
		return dst, dropped, nil
	}
	if choice.GetObject() == nil {
		return dst, nil, pathError(rootLoc("tool_choice"), "must be an object")
	}
	typ, ok := str(choice.Get("type"))
	if !ok {
		return dst, nil, pathError(rootLoc("tool_choice"), "needs a string type")
	}
	if n == 0 {
		return dst, dropped, nil // chat refuses a tool choice without tools
	}
	switch string(typ) {
	case "auto":
		dst = append(dst, `,"tool_choice":"auto"`...)
	case "any":
		dst = append(dst, `,"tool_choice":"required"`...)
	case "none":
		dst = append(dst, `,"tool_choice":"none"`...)
	case "tool":
		dst = append(dst, `,"tool_choice":{"type":"function","function":{"name":`...)
		if dst, ok = appendRawString(dst, choice.Get("name")); !ok {
			return dst, nil, pathError(rootLoc("tool_choice"), `a "tool" choice needs a string name`)
		}
		dst = append(dst, "}}"...)
	default:
		return dst, dropped, nil
	}
	if choice.GetBool("disable_parallel_tool_use") && string(typ) != "none" {
		dst = append(dst, `,"parallel_tool_calls":false`...)
	}
	return dst, dropped, nil
}

// appendDroppedName adds a dropped tool's type to dropped, once: as sent
// when it looks like a type name ([a-z0-9_.:-], at most 64 bytes, as the
// Responses translator reports its own), else "unknown", so the header
// never carries what a client wrote beyond that.
func appendDroppedName(dropped []string, typ []byte) []string {
	name := "unknown"
	if len(typ) > 0 && len(typ) <= 64 {
		name = string(typ)
		for _, c := range typ {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
				name = "unknown"
				break
			}
		}
	}
	for _, d := range dropped {
		if d == name {
			return dropped
		}
	}
	return append(dropped, name)
}
