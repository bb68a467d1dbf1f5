package provider

import (
	"strconv"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/router"
)

// AnthropicVersion is the Messages API version header the adapter speaks.
const AnthropicVersion = "2023-06-01"

// anthropicAdapter translates OpenAI chat completions to Anthropic's
// Messages API (POST {base_url}/v1/messages) and back. Stateless; safe for
// concurrent use.
type anthropicAdapter struct{}

func newAnthropicAdapter() Adapter { return anthropicAdapter{} }

// Surfaces reports chat (translated) and messages (passed through).
func (anthropicAdapter) Surfaces() router.SurfaceSet { return anthropicSurfaces }

// uriPaths lists the paths under base_url it sends to, the pass-through's
// included (see Prepare).
func (anthropicAdapter) uriPaths() []string { return messagesAdapter{}.uriPaths() }

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
	ep.setRequestURI(req, messagesPath)
	req.Header.SetContentType("application/json")
	req.Header.Set("anthropic-version", AnthropicVersion)
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
	p := parserPool.Get()
	defer parserPool.Put(p)
	root, cp, err := parseChatRequest(p, c.Body)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"model":`...)
	dst = AppendJSONString(dst, byteconv.String(model))
	dst = append(dst, ',')
	dst = cp.appendSampling(dst, `"max_tokens"`, `"top_p"`, `"stop_sequences"`)
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
	if dst, err = appendSystem(dst, msgs, anthropicBlocks{}); err != nil {
		return dst, err
	}
	if dst, _, err = appendMessages(dst, msgs, anthropicBlocks{}); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
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
		dst = append(dst, '{')
		dst = t.appendFields(dst, `"input_schema":`)
		dst = append(dst, '}')
	})
	if err != nil {
		return dst, err
	}
	if n > 0 {
		dst = append(dst, ']')
	}
	pc := root.Get("parallel_tool_calls")
	noParallel := pc != nil && pc.Type() == fastjson.TypeFalse
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

// anthropicBlocks spells Messages API content blocks.
type anthropicBlocks struct{}

func (anthropicBlocks) text(dst []byte, s string) []byte {
	dst = append(dst, `{"type":"text","text":`...)
	dst = AppendJSONString(dst, s)
	return append(dst, '}')
}

func (anthropicBlocks) image(dst []byte, img imageRef) ([]byte, error) {
	if img.url != "" {
		dst = append(dst, `{"type":"image","source":{"type":"url","url":`...)
		dst = AppendJSONString(dst, img.url)
	} else {
		dst = append(dst, `{"type":"image","source":{"type":"base64","media_type":`...)
		dst = AppendJSONString(dst, img.mediaType)
		dst = append(dst, `,"data":`...)
		dst = AppendJSONString(dst, img.data)
	}
	return append(dst, "}}"...), nil
}

func (anthropicBlocks) toolUse(dst []byte, id, name, args string) []byte {
	dst = append(dst, `{"type":"tool_use","id":`...)
	dst = AppendJSONString(dst, id)
	dst = append(dst, `,"name":`...)
	dst = AppendJSONString(dst, name)
	dst = append(dst, `,"input":`...)
	dst = append(dst, args...) // checked to be a JSON object: embedded as is
	return append(dst, '}')
}

// toolResult sends no content for an empty result (it is optional).
func (anthropicBlocks) toolResult(dst []byte, id, text string) []byte {
	dst = append(dst, `{"type":"tool_result","tool_use_id":`...)
	dst = AppendJSONString(dst, id)
	if text != "" {
		dst = append(dst, `,"content":`...)
		dst = AppendJSONString(dst, text)
	}
	return append(dst, '}')
}

// TranslateResponse turns a Messages response into a chat.completion.
func (anthropicAdapter) TranslateResponse(dst, body []byte, c *Call) ([]byte, error) {
	p := parserPool.Get()
	defer parserPool.Put(p)
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
	return w.end(finishReason(stop), parsedUsage(v.Get("usage"))), nil
}

// errBadUpstreamBody is a 2xx answer whose body is not the provider's JSON.
var errBadUpstreamBody = &StreamError{Class: ClassTransport, Status: 502,
	Body: AppendError(nil, "upstream answered with a malformed body", TypeUpstream, CodeUpstreamError)}

// parsedUsage reads a provider's parsed usage object (any provider's
// names: usage_fields.go); nothing known when it is absent or doubtful.
func parsedUsage(o *fastjson.Value) Usage {
	p, ok := fastjsonParts(o)
	if !ok {
		return Usage{}
	}
	u, _ := p.resolve()
	return u
}

// ClassifyError reads Anthropic's {"type":"error","error":{"type","message"}}.
func (anthropicAdapter) ClassifyError(status int, _ *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	p := parserPool.Get()
	defer parserPool.Put(p)
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
