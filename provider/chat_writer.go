package provider

// OpenAI chat shapes shared by the translating adapters (anthropic and
// bedrock): writing chat.completion bodies and chat.completion.chunk SSE
// frames by appending bytes, and the stream state both decoders keep.
// Reading the client's request is in openai_request.go.

import (
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
)

// defaultMaxTokens is sent as the provider's required output-token limit
// when the client set neither max_completion_tokens nor max_tokens.
const defaultMaxTokens = 4096

// parserPool parses client bodies and upstream answers; a parsed value never
// outlives the call that got the parser.
var parserPool fastjson.ParserPool

// RequestError is a client request the translating adapters cannot express
// in the provider's protocol (malformed chat body, unsupported content part).
// The walk should answer it with 400 invalid_request_error; Message is safe
// to show to the client.
type RequestError struct{ Message string }

func (e *RequestError) Error() string { return e.Message }

func badRequest(msg string) error { return &RequestError{Message: msg} }

var errNotChat = badRequest("this provider serves only /v1/chat/completions")

// jsonStr returns v's string value ("" and false when v is not a string).
func jsonStr(v *fastjson.Value) (string, bool) {
	if v == nil || v.Type() != fastjson.TypeString {
		return "", false
	}
	b, _ := v.StringBytes()
	return byteconv.String(b), true
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
			dst = AppendJSONString(dst, byteconv.String(k))
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

// appendUsage appends u as a chat usage object: prompt_tokens is the whole
// input (cache writes and reads included, as OpenAI counts it), and
// prompt_tokens_details has the cache reads as cached_tokens and the cache
// writes as cache_write_tokens (OpenAI's names for them), each when not 0.
// Counts the provider did not report are written as 0.
func appendUsage(dst []byte, u Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, u.Prompt, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, u.Completion, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.Prompt+u.Completion, 10)
	if u.CacheRead > 0 || u.CacheWrite > 0 {
		dst = append(dst, `,"prompt_tokens_details":{`...)
		if u.CacheRead > 0 {
			dst = append(dst, `"cached_tokens":`...)
			dst = strconv.AppendInt(dst, u.CacheRead, 10)
		}
		if u.CacheWrite > 0 {
			if u.CacheRead > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `"cache_write_tokens":`...)
			dst = strconv.AppendInt(dst, u.CacheWrite, 10)
		}
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
	w.dst = AppendJSONString(w.dst, byteconv.String(model))
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
		w.dst = AppendJSONString(w.dst, byteconv.String(w.text))
	} else {
		w.dst = append(w.dst, "null"...)
	}
}

func (w *completionWriter) end(finish string, u Usage) []byte {
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
	// reported is the usage of the final usage event, read from the
	// provider's own fields, whether or not the client asked for its
	// chunk (translated providers always report it).
	reported Usage
}

func newChunkWriter(c *Call) chunkWriter {
	// The model is copied: the decoder outlives Walk, c.Model does not.
	w := chunkWriter{created: time.Now().Unix(), model: append([]byte(nil), c.Model...)}
	p := parserPool.Get()
	if v, err := p.ParseBytes(c.Body); err == nil {
		w.includeUsage = v.GetBool("stream_options", "include_usage")
	}
	parserPool.Put(p)
	return w
}

// head appends a frame's fields before the choices.
func (w *chunkWriter) head(dst []byte) []byte {
	dst = append(dst, `data: {"id":`...)
	dst = AppendJSONString(dst, w.id)
	dst = append(dst, `,"object":"chat.completion.chunk","created":`...)
	dst = strconv.AppendInt(dst, w.created, 10)
	dst = append(dst, `,"model":`...)
	return AppendJSONString(dst, byteconv.String(w.model))
}

// open appends the frame prefix up to the delta's contents.
func (w *chunkWriter) open(dst []byte) []byte {
	return append(w.head(dst), `,"choices":[{"index":0,"delta":{`...)
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

// usage records the stream's usage and appends its chunk when the client
// asked for it.
func (w *chunkWriter) usage(dst []byte, u Usage) []byte {
	w.reported = u
	if !w.includeUsage {
		return dst
	}
	dst = append(w.head(dst), `,"choices":[],"usage":`...)
	dst = appendUsage(dst, u)
	return append(dst, "}\n\n"...)
}

// errTruncated is the message of a stream that ended before its terminal event.
var errTruncated = errors.New("upstream stream ended before its final event")

func truncatedStream() *StreamError {
	return &StreamError{Class: ClassTransport, Status: 502,
		Body: AppendError(nil, errTruncated.Error(), TypeUpstream, CodeUpstreamError)}
}

func malformedEvent() *StreamError {
	return &StreamError{Class: ClassTransport, Status: 502,
		Body: AppendError(nil, "malformed event in the upstream stream", TypeUpstream, CodeUpstreamError)}
}

// maxToolBlocks bounds the content-block index → tool-call index table.
const maxToolBlocks = 1024

// chatStream is what both stream decoders keep besides their framing: the
// chunk writer, the held role chunk and the tool call table. The role
// chunk of the provider's message start leaves together with the first
// frame that carries content (text, a tool call, the finish, the end). The
// walk commits a stream at the first frame Next returns, so an error
// before any content is returned with no frame and stays failover-safe
// (docs/routing.md, 6). Not safe for concurrent use.
type chatStream struct {
	cw    chunkWriter
	tools []int16 // content block index → tool call index, -1 = not a tool
	ntool int
	role  bool // message start seen, its role chunk not yet sent
	done  bool
}

// Usage implements UsageReporter: the stream's final usage event.
func (s *chatStream) Usage() Usage { return s.cw.reported }

// withRole translates one event, preceded by the held role chunk when the
// event produces a frame. A failure drops everything appended since start
// (the role chunk is all there can be), so it reaches the walk with no
// frame; an event that produces nothing leaves the role held.
func (s *chatStream) withRole(dst []byte, start int, translate func([]byte) ([]byte, error)) ([]byte, error) {
	if !s.role {
		return translate(dst)
	}
	mark := len(dst)
	dst = s.cw.role(dst)
	held := len(dst)
	dst, err := translate(dst)
	switch {
	case err != nil && err != io.EOF:
		return dst[:start], err
	case len(dst) == held && err == nil:
		return dst[:mark], nil
	}
	s.role = false
	return dst, err
}

// toolStart numbers the tool call that content block idx starts and
// announces it; an index out of range is ignored.
func (s *chatStream) toolStart(dst []byte, idx int, id, name string) []byte {
	if idx < 0 || idx >= maxToolBlocks {
		return dst
	}
	for len(s.tools) <= idx {
		s.tools = append(s.tools, -1)
	}
	s.tools[idx] = int16(s.ntool)
	s.ntool++
	return s.cw.toolStart(dst, int(s.tools[idx]), id, name)
}

// toolArgs appends a fragment of the arguments of content block idx's tool
// call; a block that started no tool call is ignored.
func (s *chatStream) toolArgs(dst []byte, idx int, frag string) []byte {
	if frag == "" || idx < 0 || idx >= len(s.tools) || s.tools[idx] < 0 {
		return dst
	}
	return s.cw.toolArgs(dst, int(s.tools[idx]), frag)
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
