package provider

// Reading the client's OpenAI chat request, once for both translating
// adapters: the scalar parameters, the tools, and the conversation walked
// message by message and part by part. What differs between providers is
// only how a content block is spelled, which each gives as a blockDialect.

import (
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
)

// chatParams are the scalar request fields both providers take.
type chatParams struct {
	maxTokens   *fastjson.Value // nil = defaultMaxTokens
	temperature *fastjson.Value
	topP        *fastjson.Value
	stop        []*fastjson.Value // strings
	user        string
}

// parseChatRequest parses and checks the client's chat body. The returned
// values are valid until p is returned to its pool.
func parseChatRequest(p *fastjson.Parser, body []byte) (*fastjson.Value, chatParams, error) {
	var cp chatParams
	root, err := p.ParseBytes(body)
	if err != nil || root.Type() != fastjson.TypeObject {
		return nil, cp, badRequest("request body must be a JSON object")
	}
	msgs := root.Get("messages")
	if msgs == nil || msgs.Type() != fastjson.TypeArray {
		return nil, cp, badRequest("messages must be an array")
	}
	if n := root.Get("n"); n != nil && n.Type() != fastjson.TypeNull {
		if k, err := n.Int(); err != nil || k != 1 {
			return nil, cp, badRequest("n other than 1 is not supported by this provider")
		}
	}
	for _, k := range [...]string{"max_completion_tokens", "max_tokens"} {
		if v := root.Get(k); v != nil && v.Type() != fastjson.TypeNull {
			if n, err := v.Int(); err != nil || n < 1 {
				return nil, cp, badRequest(k + " must be a positive integer")
			}
			cp.maxTokens = v
			break
		}
	}
	num := func(k string) (*fastjson.Value, error) {
		v := root.Get(k)
		if v == nil || v.Type() == fastjson.TypeNull {
			return nil, nil
		}
		if v.Type() != fastjson.TypeNumber {
			return nil, badRequest(k + " must be a number")
		}
		return v, nil
	}
	if cp.temperature, err = num("temperature"); err != nil {
		return nil, cp, err
	}
	if cp.topP, err = num("top_p"); err != nil {
		return nil, cp, err
	}
	if s := root.Get("stop"); s != nil {
		switch s.Type() {
		case fastjson.TypeNull:
		case fastjson.TypeString:
			cp.stop = []*fastjson.Value{s}
		case fastjson.TypeArray:
			cp.stop, _ = s.Array()
			for _, e := range cp.stop {
				if e.Type() != fastjson.TypeString {
					return nil, cp, badRequest("stop must be a string or an array of strings")
				}
			}
		default:
			return nil, cp, badRequest("stop must be a string or an array of strings")
		}
	}
	if u := root.Get("user"); u != nil && u.Type() != fastjson.TypeNull {
		var ok bool
		if cp.user, ok = jsonStr(u); !ok {
			return nil, cp, badRequest("user must be a string")
		}
	}
	return root, cp, nil
}

// appendSampling appends the token limit, temperature, top_p and stop
// sequences under the provider's key names (quoted, e.g. `"max_tokens"`),
// starting with the token limit and no leading comma.
func (cp *chatParams) appendSampling(dst []byte, maxTokensKey, topPKey, stopKey string) []byte {
	dst = append(dst, maxTokensKey...)
	dst = append(dst, ':')
	if cp.maxTokens != nil {
		dst = cp.maxTokens.MarshalTo(dst)
	} else {
		dst = strconv.AppendInt(dst, defaultMaxTokens, 10)
	}
	if cp.temperature != nil {
		dst = append(dst, `,"temperature":`...)
		dst = cp.temperature.MarshalTo(dst)
	}
	if cp.topP != nil {
		dst = append(dst, ',')
		dst = append(dst, topPKey...)
		dst = append(dst, ':')
		dst = cp.topP.MarshalTo(dst)
	}
	if len(cp.stop) > 0 {
		dst = append(dst, ',')
		dst = append(dst, stopKey...)
		dst = append(dst, ":["...)
		for i, s := range cp.stop {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONValue(dst, s)
		}
		dst = append(dst, ']')
	}
	return dst
}

// chatTool is one OpenAI function tool.
type chatTool struct {
	name, description string
	parameters        *fastjson.Value // nil = {"type":"object"}
}

// forEachTool calls f for every function tool of the request.
func forEachTool(root *fastjson.Value, f func(chatTool)) error {
	tools := root.Get("tools")
	if tools == nil || tools.Type() == fastjson.TypeNull {
		return nil
	}
	arr, err := tools.Array()
	if err != nil {
		return badRequest("tools must be an array")
	}
	for _, t := range arr {
		if typ, _ := jsonStr(t.Get("type")); typ != "function" {
			return badRequest(`only tools of type "function" are supported by this provider`)
		}
		fn := t.Get("function")
		name, ok := jsonStr(fn.Get("name"))
		if !ok || name == "" {
			return badRequest("tools[].function.name must be a non-empty string")
		}
		ct := chatTool{name: name}
		ct.description, _ = jsonStr(fn.Get("description"))
		if p := fn.Get("parameters"); p != nil && p.Type() == fastjson.TypeObject {
			ct.parameters = p
		}
		f(ct)
	}
	return nil
}

// appendFields appends the tool's name, description and parameters, the
// last under schemaKey (everything up to the schema, e.g. `"input_schema":`).
func (t chatTool) appendFields(dst []byte, schemaKey string) []byte {
	dst = append(dst, `"name":`...)
	dst = AppendJSONString(dst, t.name)
	if t.description != "" {
		dst = append(dst, `,"description":`...)
		dst = AppendJSONString(dst, t.description)
	}
	dst = append(dst, ',')
	dst = append(dst, schemaKey...)
	if t.parameters != nil {
		return appendJSONValue(dst, t.parameters)
	}
	return append(dst, `{"type":"object"}`...)
}

// toolChoice is the request's tool_choice, normalized.
type toolChoice struct {
	mode string // "", "auto", "required", "none", "function"
	name string // for "function"
}

func parseToolChoice(root *fastjson.Value) (toolChoice, error) {
	v := root.Get("tool_choice")
	if v == nil || v.Type() == fastjson.TypeNull {
		return toolChoice{}, nil
	}
	if s, ok := jsonStr(v); ok {
		switch s {
		case "auto", "required", "none":
			return toolChoice{mode: s}, nil
		}
		return toolChoice{}, badRequest(`tool_choice must be "auto", "required", "none" or a function`)
	}
	name, ok := jsonStr(v.Get("function", "name"))
	if typ, _ := jsonStr(v.Get("type")); typ != "function" || !ok || name == "" {
		return toolChoice{}, badRequest(`tool_choice must be "auto", "required", "none" or a function`)
	}
	return toolChoice{mode: "function", name: name}, nil
}

// contentText returns the text of a string content, or of an array of text
// parts joined by "\n" (system, developer and tool messages). The result
// views the parser's memory unless several parts had to be joined.
func contentText(v *fastjson.Value) (string, error) {
	if v == nil || v.Type() == fastjson.TypeNull {
		return "", nil
	}
	if s, ok := jsonStr(v); ok {
		return s, nil
	}
	parts, err := v.Array()
	if err != nil {
		return "", badRequest("message content must be a string or an array of parts")
	}
	var joined []byte
	for i, p := range parts {
		s, ok := jsonStr(p.Get("text"))
		if typ, _ := jsonStr(p.Get("type")); typ != "text" || !ok {
			return "", badRequest("only text parts are supported in system, developer and tool messages")
		}
		if len(parts) == 1 {
			return s, nil
		}
		if i > 0 {
			joined = append(joined, '\n')
		}
		joined = append(joined, s...)
	}
	return byteconv.String(joined), nil
}

// imageRef is an image_url part: either inline (mediaType + base64 data) or
// a remote URL.
type imageRef struct {
	mediaType, data string
	url             string
}

func parseImageURL(p *fastjson.Value) (imageRef, error) {
	u, ok := jsonStr(p.Get("image_url", "url"))
	if !ok {
		u, ok = jsonStr(p.Get("image_url")) // older clients send the URL itself
	}
	if !ok || u == "" {
		return imageRef{}, badRequest("image_url.url must be a non-empty string")
	}
	if strings.HasPrefix(u, "data:") {
		meta, data, found := strings.Cut(u[len("data:"):], ",")
		mt, isB64 := strings.CutSuffix(meta, ";base64")
		if !found || !isB64 || !strings.HasPrefix(mt, "image/") {
			return imageRef{}, badRequest("image data URLs must look like data:image/<type>;base64,<data>")
		}
		return imageRef{mediaType: mt, data: data}, nil
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return imageRef{url: u}, nil
	}
	return imageRef{}, badRequest("image_url.url must be an http(s) or data: URL")
}

// blockDialect spells one provider's content blocks. Stateless; the
// implementations are empty structs.
type blockDialect interface {
	// text appends a text block; s is never empty.
	text(dst []byte, s string) []byte
	// image appends an image block, or refuses an image the provider
	// cannot take (the error abandons the whole request).
	image(dst []byte, img imageRef) ([]byte, error)
	// toolUse appends an assistant tool call; args is a JSON object.
	toolUse(dst []byte, id, name, args string) []byte
	// toolResult appends the result of tool call id (text may be empty).
	toolResult(dst []byte, id, text string) []byte
}

// appendSystem appends the system and developer messages as a top-level
// "system" array of text blocks (none when they hold no text).
func appendSystem(dst []byte, msgs []*fastjson.Value, d blockDialect) ([]byte, error) {
	n := 0
	for _, m := range msgs {
		if role, _ := jsonStr(m.Get("role")); role != "system" && role != "developer" {
			continue
		}
		text, err := contentText(m.Get("content"))
		if err != nil {
			return dst, err
		}
		if text == "" { // both providers refuse empty text blocks
			continue
		}
		if n == 0 {
			dst = append(dst, `,"system":[`...)
		} else {
			dst = append(dst, ',')
		}
		n++
		dst = d.text(dst, text)
	}
	if n > 0 {
		dst = append(dst, ']')
	}
	return dst, nil
}

// appendMessages appends the conversation without its system and developer
// messages as a "messages" array, and reports whether it holds a tool call
// or result.
func appendMessages(dst []byte, msgs []*fastjson.Value, d blockDialect) ([]byte, bool, error) {
	w := msgWriter{dst: append(dst, `,"messages":[`...), d: d}
	argParser := parserPool.Get()
	defer parserPool.Put(argParser)
	for _, m := range msgs {
		var err error
		switch role, _ := jsonStr(m.Get("role")); role {
		case "system", "developer":
		case "user":
			err = w.user(m.Get("content"))
		case "assistant":
			err = w.assistant(argParser, m)
		case "tool":
			err = w.toolResult(m)
		default:
			err = badRequest("unsupported message role " + strconv.Quote(role))
		}
		if err != nil {
			return w.dst, false, err
		}
	}
	w.close()
	return append(w.dst, ']'), w.toolHistory, nil
}

// msgWriter appends a provider's messages array, merging consecutive
// messages of the same role into one (both providers want alternating
// roles) and opening a message only when it gets its first block, so no
// message is ever empty.
type msgWriter struct {
	dst  []byte
	d    blockDialect
	role string // role of the open message; "" = none
	n    int    // messages opened
	// toolHistory is set once the conversation holds a tool call or result.
	toolHistory bool
}

// block prepares dst for one more content block of role.
func (w *msgWriter) block(role string) {
	if w.role == role {
		w.dst = append(w.dst, ',')
		return
	}
	w.close()
	if w.n > 0 {
		w.dst = append(w.dst, ',')
	}
	w.n++
	w.dst = append(w.dst, `{"role":"`...)
	w.dst = append(w.dst, role...)
	w.dst = append(w.dst, `","content":[`...)
	w.role = role
}

func (w *msgWriter) close() {
	if w.role != "" {
		w.dst = append(w.dst, "]}"...)
		w.role = ""
	}
}

// text appends a text block of role; empty text is dropped (neither
// provider takes empty text blocks).
func (w *msgWriter) text(role, s string) {
	if s == "" {
		return
	}
	w.block(role)
	w.dst = w.d.text(w.dst, s)
}

func (w *msgWriter) user(content *fastjson.Value) error {
	if content == nil || content.Type() == fastjson.TypeNull {
		return badRequest("user messages need content")
	}
	if s, ok := jsonStr(content); ok {
		w.text("user", s)
		return nil
	}
	parts, err := content.Array()
	if err != nil {
		return badRequest("message content must be a string or an array of parts")
	}
	for _, p := range parts {
		switch typ, _ := jsonStr(p.Get("type")); typ {
		case "text":
			s, ok := jsonStr(p.Get("text"))
			if !ok {
				return badRequest("text parts need a string text")
			}
			w.text("user", s)
		case "image_url":
			img, err := parseImageURL(p)
			if err != nil {
				return err
			}
			w.block("user")
			if w.dst, err = w.d.image(w.dst, img); err != nil {
				return err
			}
		default:
			return badRequest("content part type " + strconv.Quote(typ) + " is not supported by this provider")
		}
	}
	return nil
}

func (w *msgWriter) assistant(argParser *fastjson.Parser, m *fastjson.Value) error {
	content := m.Get("content")
	if s, ok := jsonStr(content); ok {
		w.text("assistant", s)
	} else if content != nil && content.Type() == fastjson.TypeArray {
		parts, _ := content.Array()
		for _, p := range parts {
			switch typ, _ := jsonStr(p.Get("type")); typ {
			case "text":
				s, _ := jsonStr(p.Get("text"))
				w.text("assistant", s)
			case "refusal":
			default:
				return badRequest("assistant content part type " + strconv.Quote(typ) + " is not supported")
			}
		}
	}
	calls := m.Get("tool_calls")
	if calls == nil || calls.Type() == fastjson.TypeNull {
		return nil
	}
	arr, err := calls.Array()
	if err != nil {
		return badRequest("tool_calls must be an array")
	}
	for _, tc := range arr {
		id, _ := jsonStr(tc.Get("id"))
		name, _ := jsonStr(tc.Get("function", "name"))
		if id == "" || name == "" {
			return badRequest("tool_calls[] need an id and a function name")
		}
		args, err := toolArguments(argParser, tc)
		if err != nil {
			return err
		}
		w.block("assistant")
		w.dst = w.d.toolUse(w.dst, id, name, args)
		w.toolHistory = true
	}
	return nil
}

func (w *msgWriter) toolResult(m *fastjson.Value) error {
	id, ok := jsonStr(m.Get("tool_call_id"))
	if !ok || id == "" {
		return badRequest("tool messages need a tool_call_id")
	}
	text, err := contentText(m.Get("content"))
	if err != nil {
		return err
	}
	w.block("user")
	w.dst = w.d.toolResult(w.dst, id, text)
	w.toolHistory = true
	return nil
}

// toolArguments returns an assistant tool call's arguments string, checked
// to be a JSON object ("" becomes {}).
func toolArguments(p *fastjson.Parser, tc *fastjson.Value) (string, error) {
	args, ok := jsonStr(tc.Get("function", "arguments"))
	if !ok && tc.Get("function", "arguments") != nil {
		return "", badRequest("tool_calls[].function.arguments must be a string")
	}
	if strings.TrimSpace(args) == "" {
		return "{}", nil
	}
	// A separate parser: the caller's values live in its own parser.
	v, err := p.Parse(args)
	if err != nil || v.Type() != fastjson.TypeObject {
		return "", badRequest("tool_calls[].function.arguments must be a JSON object")
	}
	return args, nil
}
