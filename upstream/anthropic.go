package upstream

import (
	"strconv"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
)

func init() { adapterFactories[config.ProviderAnthropic] = newAnthropicAdapter }

// anthropicVersion is the Messages API version header the adapter speaks.
const anthropicVersion = "2023-06-01"

// anthropicAdapter translates OpenAI chat completions to Anthropic's
// Messages API (POST {base_url}/v1/messages) and back. Stateless; safe for
// concurrent use.
type anthropicAdapter struct{}

func newAnthropicAdapter() Adapter { return anthropicAdapter{} }

// Surfaces reports chat only: the Messages API has no other OpenAI surface.
func (anthropicAdapter) Surfaces() router.SurfaceSet { return 1 << router.SurfaceChat }

// BuildRequest translates the client's chat body into a Messages request.
func (anthropicAdapter) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if c.Surface != router.SurfaceChat {
		return errNotChat
	}
	body, err := anthropicRequestBody(req.SwapBody(nil)[:0], c, upstreamModel)
	req.SwapBody(body)
	if err != nil {
		return err
	}
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(ep.BaseURL + "/v1/messages")
	req.Header.SetContentType("application/json")
	req.Header.Set("anthropic-version", anthropicVersion)
	if ep.APIKey != "" {
		req.Header.Set("x-api-key", ep.APIKey)
	}
	if c.Stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	return nil
}

// anthropicRequestBody appends the Messages request for c to dst.
func anthropicRequestBody(dst []byte, c *Call, model []byte) ([]byte, error) {
	p := chatParsers.Get()
	defer chatParsers.Put(p)
	root, cp, err := parseChatRequest(p, c.Body)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"model":`...)
	dst = AppendJSONString(dst, b2s(model))
	dst = append(dst, `,"max_tokens":`...)
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
		dst = append(dst, `,"top_p":`...)
		dst = cp.topP.MarshalTo(dst)
	}
	if len(cp.stop) > 0 {
		dst = append(dst, `,"stop_sequences":[`...)
		for i, s := range cp.stop {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONValue(dst, s)
		}
		dst = append(dst, ']')
	}
	if c.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	if cp.user != "" {
		dst = append(dst, `,"metadata":{"user_id":`...)
		dst = AppendJSONString(dst, cp.user)
		dst = append(dst, '}')
	}
	if dst, err = anthropicTools(dst, root); err != nil {
		return dst, err
	}
	msgs, _ := root.Get("messages").Array()
	// System and developer messages first, as the top-level system blocks.
	nsys := 0
	for _, m := range msgs {
		role, _ := jsonStr(m.Get("role"))
		if role != "system" && role != "developer" {
			continue
		}
		start := len(dst)
		if nsys == 0 {
			dst = append(dst, `,"system":[`...)
		} else {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"text","text":`...)
		text, err := contentText(nil, m.Get("content"), "\n")
		if err != nil {
			return dst, err
		}
		if len(text) == 0 { // Anthropic refuses empty text blocks.
			dst = dst[:start]
			continue
		}
		dst = AppendJSONString(dst, b2s(text))
		dst = append(dst, '}')
		nsys++
	}
	if nsys > 0 {
		dst = append(dst, ']')
	}
	dst = append(dst, `,"messages":[`...)
	w := msgWriter{dst: dst}
	argParser := chatParsers.Get()
	defer chatParsers.Put(argParser)
	for _, m := range msgs {
		role, _ := jsonStr(m.Get("role"))
		switch role {
		case "system", "developer":
		case "user":
			err = anthropicUserContent(&w, m.Get("content"))
		case "assistant":
			err = anthropicAssistant(&w, argParser, m)
		case "tool":
			err = anthropicToolResult(&w, m)
		default:
			err = badRequest("unsupported message role " + strconv.Quote(role))
		}
		if err != nil {
			return w.dst, err
		}
	}
	w.close()
	dst = append(w.dst, "]}"...)
	return dst, nil
}

// anthropicTools appends tools and tool_choice.
func anthropicTools(dst []byte, root *fastjson.Value) ([]byte, error) {
	tc, err := parseToolChoice(root)
	if err != nil {
		return dst, err
	}
	n := 0
	err = forEachTool(root, func(t chatTool) {
		if n == 0 {
			dst = append(dst, `,"tools":[`...)
		} else {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"name":`...)
		dst = AppendJSONString(dst, t.name)
		if t.description != "" {
			dst = append(dst, `,"description":`...)
			dst = AppendJSONString(dst, t.description)
		}
		dst = append(dst, `,"input_schema":`...)
		if t.parameters != nil {
			dst = appendJSONValue(dst, t.parameters)
		} else {
			dst = append(dst, `{"type":"object"}`...)
		}
		dst = append(dst, '}')
	})
	if err != nil {
		return dst, err
	}
	if n > 0 {
		dst = append(dst, ']')
	}
	noParallel := root.Get("parallel_tool_calls") != nil && root.Get("parallel_tool_calls").Type() == fastjson.TypeFalse
	if n == 0 || (tc.mode == "" && !noParallel) {
		return dst, nil
	}
	dst = append(dst, `,"tool_choice":{"type":`...)
	switch tc.mode {
	case "", "auto":
		dst = append(dst, `"auto"`...)
	case "required":
		dst = append(dst, `"any"`...)
	case "none":
		dst = append(dst, `"none"`...)
	case "function":
		dst = append(dst, `"tool","name":`...)
		dst = AppendJSONString(dst, tc.name)
	}
	if noParallel && tc.mode != "none" {
		dst = append(dst, `,"disable_parallel_tool_use":true`...)
	}
	return append(dst, '}'), nil
}

func anthropicUserContent(w *msgWriter, content *fastjson.Value) error {
	if content == nil || content.Type() == fastjson.TypeNull {
		return badRequest("user messages need content")
	}
	if s, ok := jsonStr(content); ok {
		anthropicText(w, "user", s)
		return nil
	}
	parts, err := content.Array()
	if err != nil {
		return badRequest("message content must be a string or an array of parts")
	}
	for _, p := range parts {
		typ, _ := jsonStr(p.Get("type"))
		switch typ {
		case "text":
			s, ok := jsonStr(p.Get("text"))
			if !ok {
				return badRequest("text parts need a string text")
			}
			anthropicText(w, "user", s)
		case "image_url":
			img, err := parseImageURL(p)
			if err != nil {
				return err
			}
			w.block("user")
			if img.url != "" {
				w.dst = append(w.dst, `{"type":"image","source":{"type":"url","url":`...)
				w.dst = AppendJSONString(w.dst, img.url)
			} else {
				w.dst = append(w.dst, `{"type":"image","source":{"type":"base64","media_type":`...)
				w.dst = AppendJSONString(w.dst, img.mediaType)
				w.dst = append(w.dst, `,"data":`...)
				w.dst = AppendJSONString(w.dst, img.data)
			}
			w.dst = append(w.dst, "}}"...)
		default:
			return badRequest("content part type " + strconv.Quote(typ) + " is not supported by this provider")
		}
	}
	return nil
}

// anthropicText appends a text block; empty text is dropped (the API
// refuses empty text blocks).
func anthropicText(w *msgWriter, role, s string) {
	if s == "" {
		return
	}
	w.block(role)
	w.dst = append(w.dst, `{"type":"text","text":`...)
	w.dst = AppendJSONString(w.dst, s)
	w.dst = append(w.dst, '}')
}

func anthropicAssistant(w *msgWriter, argParser *fastjson.Parser, m *fastjson.Value) error {
	content := m.Get("content")
	if s, ok := jsonStr(content); ok {
		anthropicText(w, "assistant", s)
	} else if content != nil && content.Type() == fastjson.TypeArray {
		parts, _ := content.Array()
		for _, p := range parts {
			switch typ, _ := jsonStr(p.Get("type")); typ {
			case "text":
				s, _ := jsonStr(p.Get("text"))
				anthropicText(w, "assistant", s)
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
		w.dst = append(w.dst, `{"type":"tool_use","id":`...)
		w.dst = AppendJSONString(w.dst, id)
		w.dst = append(w.dst, `,"name":`...)
		w.dst = AppendJSONString(w.dst, name)
		w.dst = append(w.dst, `,"input":`...)
		// args was checked to be a JSON object: embed it as is.
		w.dst = append(w.dst, args...)
		w.dst = append(w.dst, '}')
	}
	return nil
}

func anthropicToolResult(w *msgWriter, m *fastjson.Value) error {
	id, ok := jsonStr(m.Get("tool_call_id"))
	if !ok || id == "" {
		return badRequest("tool messages need a tool_call_id")
	}
	w.block("user")
	w.dst = append(w.dst, `{"type":"tool_result","tool_use_id":`...)
	w.dst = AppendJSONString(w.dst, id)
	start := len(w.dst)
	text, err := contentText(w.dst, m.Get("content"), "\n")
	if err != nil {
		return err
	}
	// Quote the text that contentText appended in place; an empty result
	// sends no content (it is optional).
	if len(text) > start {
		raw := string(text[start:])
		w.dst = append(text[:start], `,"content":`...)
		w.dst = AppendJSONString(w.dst, raw)
	} else {
		w.dst = text[:start]
	}
	w.dst = append(w.dst, '}')
	return nil
}

// TranslateResponse turns a Messages response into a chat.completion.
func (anthropicAdapter) TranslateResponse(dst, body []byte, c *Call) ([]byte, error) {
	p := chatParsers.Get()
	defer chatParsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil || v.Type() != fastjson.TypeObject {
		return dst, errBadUpstreamBody
	}
	id, _ := jsonStr(v.Get("id"))
	w := completionWriter{dst: dst}
	w.begin(id, c.Model)
	blocks := v.GetArray("content")
	for _, b := range blocks {
		if typ, _ := jsonStr(b.Get("type")); typ == "text" {
			s, _ := jsonStr(b.Get("text"))
			w.text = append(w.text, s...)
			w.hasText = true
		}
	}
	for _, b := range blocks {
		if typ, _ := jsonStr(b.Get("type")); typ == "tool_use" {
			tid, _ := jsonStr(b.Get("id"))
			name, _ := jsonStr(b.Get("name"))
			w.toolCall(tid, name, b.Get("input"))
		}
	}
	stop, _ := jsonStr(v.Get("stop_reason"))
	return w.end(finishReason(stop), anthropicUsage(v.Get("usage"))), nil
}

// errBadUpstreamBody is a 2xx answer whose body is not the provider's JSON.
var errBadUpstreamBody = &StreamError{Class: ClassTransport, Status: 502,
	Body: AppendError(nil, "upstream answered with a malformed body", TypeUpstream, CodeUpstreamError)}

// anthropicUsage reads a usage object. Anthropic's input_tokens excludes
// cached tokens, OpenAI's prompt_tokens includes them.
func anthropicUsage(u *fastjson.Value) usage {
	if u == nil {
		return usage{}
	}
	cached := u.GetInt64("cache_read_input_tokens")
	return usage{
		prompt:     u.GetInt64("input_tokens") + u.GetInt64("cache_creation_input_tokens") + cached,
		completion: u.GetInt64("output_tokens"),
		cached:     cached,
	}
}

// ClassifyError reads Anthropic's {"type":"error","error":{"type","message"}}.
func (anthropicAdapter) ClassifyError(status int, _ *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	p := chatParsers.Get()
	defer chatParsers.Put(p)
	msg := ""
	if v, err := p.ParseBytes(body); err == nil {
		// msg views the parser's memory: used before the deferred Put.
		msg, _ = jsonStr(v.Get("error", "message"))
	}
	if msg == "" {
		msg = "anthropic answered HTTP " + strconv.Itoa(status)
	}
	cl := anthropicClass(status, msg)
	return cl, classEnvelope(cl, msg)
}

// anthropicClass classifies an Anthropic error status and message.
func anthropicClass(status int, msg string) Class {
	switch {
	case status == 429:
		return ClassRateLimited
	case status == 408 || status >= 500: // 529 overloaded included
		return ClassServer
	case status == 401 || status == 403:
		return ClassAuth
	case status == 400 && containsFold(msg, "prompt is too long"):
		return ClassContextLength
	}
	return ClassClient
}

// anthropicErrorStatus is the HTTP status Anthropic gives each error type,
// for error events inside a stream.
func anthropicErrorStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return 400
	case "authentication_error":
		return 401
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "request_too_large":
		return 413
	case "rate_limit_error":
		return 429
	case "timeout_error":
		return 504
	case "overloaded_error":
		return 529
	}
	return 500 // api_error and unknown types
}
