package upstream

// OpenAI chat shapes shared by the translating adapters (anthropic and
// bedrock): reading the client's chat completion request with fastjson and
// writing chat.completion bodies and chat.completion.chunk SSE frames by
// appending bytes.

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/valyala/fastjson"
)

// defaultMaxTokens is sent as the provider's required output-token limit
// when the client set neither max_completion_tokens nor max_tokens.
const defaultMaxTokens = 4096

// chatParsers parses client bodies and upstream answers; a parsed value never
// outlives the call that got the parser.
var chatParsers fastjson.ParserPool

// RequestError is a client request the translating adapters cannot express
// in the provider's protocol (malformed chat body, unsupported content part).
// The walk should answer it with 400 invalid_request_error; Message is safe
// to show to the client.
type RequestError struct{ Message string }

func (e *RequestError) Error() string { return e.Message }

func badRequest(msg string) error { return &RequestError{Message: msg} }

var errNotChat = badRequest("this provider serves only /v1/chat/completions")

// b2s views b as a string without copying; the string must not outlive b.
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// jsonStr returns v's string value ("" and false when v is not a string).
func jsonStr(v *fastjson.Value) (string, bool) {
	if v == nil || v.Type() != fastjson.TypeString {
		return "", false
	}
	b, _ := v.StringBytes()
	return b2s(b), true
}

// appendJSONValue re-serializes a parsed value. Unlike fastjson's MarshalTo,
// which escapes strings with strconv.Quote (not always valid JSON), it
// escapes every string and key with AppendJSONString.
func appendJSONValue(dst []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		dst = append(dst, '{')
		first := true
		o.Visit(func(k []byte, vv *fastjson.Value) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = AppendJSONString(dst, b2s(k))
			dst = append(dst, ':')
			dst = appendJSONValue(dst, vv)
		})
		return append(dst, '}')
	case fastjson.TypeArray:
		a, _ := v.Array()
		dst = append(dst, '[')
		for i, vv := range a {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONValue(dst, vv)
		}
		return append(dst, ']')
	case fastjson.TypeString:
		s, _ := jsonStr(v)
		return AppendJSONString(dst, s)
	default: // numbers as written, true, false, null
		return v.MarshalTo(dst)
	}
}

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

// contentText joins the text of a string content or an array of text parts
// (system, developer and tool messages).
func contentText(dst []byte, v *fastjson.Value, sep string) ([]byte, error) {
	if v == nil || v.Type() == fastjson.TypeNull {
		return dst, nil
	}
	if s, ok := jsonStr(v); ok {
		return append(dst, s...), nil
	}
	parts, err := v.Array()
	if err != nil {
		return dst, badRequest("message content must be a string or an array of parts")
	}
	for i, p := range parts {
		s, ok := jsonStr(p.Get("text"))
		if typ, _ := jsonStr(p.Get("type")); typ != "text" || !ok {
			return dst, badRequest("only text parts are supported in system, developer and tool messages")
		}
		if i > 0 {
			dst = append(dst, sep...)
		}
		dst = append(dst, s...)
	}
	return dst, nil
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

// msgWriter appends a provider's messages array, merging consecutive
// messages of the same role into one (both providers want alternating
// roles) and opening a message only when it gets its first block, so no
// message is ever empty.
type msgWriter struct {
	dst  []byte
	role string // role of the open message; "" = none
	n    int    // messages opened
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

// finishReason maps a provider stop reason to OpenAI's finish_reason.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal", "guardrail_intervened", "content_filtered":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn and unknown reasons
}

// newChatID returns a fresh chat completion id for providers that send none.
func newChatID() string {
	var b [24]byte
	n := copy(b[:], "chatcmpl-")
	return string(strconv.AppendUint(b[:n], rand.Uint64(), 36))
}

// usage holds token counts in OpenAI's terms.
type usage struct {
	prompt, completion, cached int64
}

func appendUsage(dst []byte, u usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, u.prompt, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, u.completion, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.prompt+u.completion, 10)
	if u.cached > 0 {
		dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
		dst = strconv.AppendInt(dst, u.cached, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// completionWriter builds one chat.completion body.
type completionWriter struct {
	dst       []byte
	text      []byte // concatenated text blocks
	hasText   bool
	toolCalls int
}

func (w *completionWriter) begin(id string, model []byte) {
	w.dst = append(w.dst, `{"id":`...)
	w.dst = AppendJSONString(w.dst, id)
	w.dst = append(w.dst, `,"object":"chat.completion","created":`...)
	w.dst = strconv.AppendInt(w.dst, time.Now().Unix(), 10)
	w.dst = append(w.dst, `,"model":`...)
	w.dst = AppendJSONString(w.dst, b2s(model))
	w.dst = append(w.dst, `,"choices":[{"index":0,"message":{"role":"assistant"`...)
}

// toolCall appends one tool call; the text collected so far is written
// before the first one.
func (w *completionWriter) toolCall(id, name string, input *fastjson.Value) {
	if w.toolCalls == 0 {
		w.writeContent()
		w.dst = append(w.dst, `,"tool_calls":[`...)
	} else {
		w.dst = append(w.dst, ',')
	}
	w.toolCalls++
	w.dst = append(w.dst, `{"id":`...)
	w.dst = AppendJSONString(w.dst, id)
	w.dst = append(w.dst, `,"type":"function","function":{"name":`...)
	w.dst = AppendJSONString(w.dst, name)
	w.dst = append(w.dst, `,"arguments":`...)
	// arguments is the input object serialized as a JSON string.
	obj := "{}"
	if input != nil && input.Type() != fastjson.TypeNull {
		obj = string(appendJSONValue(nil, input))
	}
	w.dst = AppendJSONString(w.dst, obj)
	w.dst = append(w.dst, "}}"...)
}

func (w *completionWriter) writeContent() {
	w.dst = append(w.dst, `,"content":`...)
	if w.hasText {
		w.dst = AppendJSONString(w.dst, b2s(w.text))
	} else {
		w.dst = append(w.dst, "null"...)
	}
}

func (w *completionWriter) end(finish string, u usage) []byte {
	if w.toolCalls == 0 {
		w.writeContent()
	} else {
		w.dst = append(w.dst, ']')
	}
	w.dst = append(w.dst, `,"refusal":null`...) // as OpenAI sends it
	w.dst = append(w.dst, `},"logprobs":null,"finish_reason":"`...)
	w.dst = append(w.dst, finish...)
	w.dst = append(w.dst, `"}],"usage":`...)
	w.dst = appendUsage(w.dst, u)
	return append(w.dst, '}')
}

// chunkWriter writes chat.completion.chunk SSE frames for one stream.
type chunkWriter struct {
	id      string
	model   []byte
	created int64
	// includeUsage is the client's stream_options.include_usage: a final
	// chunk with empty choices carries the usage.
	includeUsage bool
}

func newChunkWriter(c *Call) chunkWriter {
	// The model is copied: the decoder outlives Walk, c.Model does not.
	w := chunkWriter{created: time.Now().Unix(), model: append([]byte(nil), c.Model...)}
	p := chatParsers.Get()
	if v, err := p.ParseBytes(c.Body); err == nil {
		w.includeUsage = v.GetBool("stream_options", "include_usage")
	}
	chatParsers.Put(p)
	return w
}

// open appends the frame prefix up to the delta's contents.
func (w *chunkWriter) open(dst []byte) []byte {
	dst = append(dst, `data: {"id":`...)
	dst = AppendJSONString(dst, w.id)
	dst = append(dst, `,"object":"chat.completion.chunk","created":`...)
	dst = strconv.AppendInt(dst, w.created, 10)
	dst = append(dst, `,"model":`...)
	dst = AppendJSONString(dst, b2s(w.model))
	return append(dst, `,"choices":[{"index":0,"delta":{`...)
}

// close ends a frame opened by open with finish_reason (or null).
func (w *chunkWriter) close(dst []byte, finish string) []byte {
	dst = append(dst, `},"logprobs":null,"finish_reason":`...)
	if finish == "" {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '"')
		dst = append(dst, finish...)
		dst = append(dst, '"')
	}
	return append(dst, "}]}\n\n"...)
}

func (w *chunkWriter) role(dst []byte) []byte {
	dst = w.open(dst)
	dst = append(dst, `"role":"assistant","content":""`...)
	return w.close(dst, "")
}

func (w *chunkWriter) text(dst []byte, s string) []byte {
	dst = w.open(dst)
	dst = append(dst, `"content":`...)
	dst = AppendJSONString(dst, s)
	return w.close(dst, "")
}

// toolStart announces tool call number idx.
func (w *chunkWriter) toolStart(dst []byte, idx int, id, name string) []byte {
	dst = w.open(dst)
	dst = append(dst, `"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(idx), 10)
	dst = append(dst, `,"id":`...)
	dst = AppendJSONString(dst, id)
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = AppendJSONString(dst, name)
	dst = append(dst, `,"arguments":""}}]`...)
	return w.close(dst, "")
}

// toolArgs appends a fragment of tool call idx's arguments.
func (w *chunkWriter) toolArgs(dst []byte, idx int, frag string) []byte {
	dst = w.open(dst)
	dst = append(dst, `"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(idx), 10)
	dst = append(dst, `,"function":{"arguments":`...)
	dst = AppendJSONString(dst, frag)
	dst = append(dst, "}}]"...)
	return w.close(dst, "")
}

func (w *chunkWriter) finish(dst []byte, finish string) []byte {
	return w.close(w.open(dst), finish)
}

// usage appends the usage chunk when the client asked for it.
func (w *chunkWriter) usage(dst []byte, u usage) []byte {
	if !w.includeUsage {
		return dst
	}
	dst = append(dst, `data: {"id":`...)
	dst = AppendJSONString(dst, w.id)
	dst = append(dst, `,"object":"chat.completion.chunk","created":`...)
	dst = strconv.AppendInt(dst, w.created, 10)
	dst = append(dst, `,"model":`...)
	dst = AppendJSONString(dst, b2s(w.model))
	dst = append(dst, `,"choices":[],"usage":`...)
	dst = appendUsage(dst, u)
	return append(dst, "}\n\n"...)
}

const doneFrame = "data: [DONE]\n\n"

// errTruncated is the message of a stream that ended before its terminal event.
var errTruncated = errors.New("upstream stream ended before its final event")

func truncatedStream() *StreamError {
	return &StreamError{Class: ClassTransport, Status: 502,
		Body: AppendError(nil, errTruncated.Error(), TypeUpstream, CodeUpstreamError)}
}

// classEnvelope returns the OpenAI envelope for a provider error message of
// class cl.
func classEnvelope(cl Class, msg string) []byte {
	switch cl {
	case ClassRateLimited:
		return AppendError(nil, msg, TypeRateLimit, CodeRateLimitExceeded)
	case ClassContextLength:
		return AppendError(nil, msg, TypeInvalidRequest, "context_length_exceeded")
	case ClassAuth:
		return AppendError(nil, msg, TypeUpstream, CodeUpstreamAuth)
	case ClassClient:
		return AppendError(nil, msg, TypeInvalidRequest, CodeInvalidRequest)
	}
	return AppendError(nil, msg, TypeUpstream, CodeUpstreamError)
}

// containsFold reports whether s contains the ASCII lower-case substr,
// ignoring ASCII case, without allocating.
func containsFold(s, substr string) bool {
	n := len(substr)
	for i := 0; i+n <= len(s); i++ {
		if strings.EqualFold(s[i:i+n], substr) {
			return true
		}
	}
	return false
}
