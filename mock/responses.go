package mock

import (
	"errors"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/bytebufferpool"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/upstream"
)

// Surfaces the mock counts separately.
const (
	surfChat = iota
	surfCompletions
	surfEmbeddings
	surfImages
	surfModels
	numSurfaces
)

var surfacePaths = [numSurfaces]string{
	"/v1/chat/completions", "/v1/completions", "/v1/embeddings",
	"/v1/images/generations", "/v1/models",
}

var bufPool bytebufferpool.Pool

// makeContent returns n bytes of plain ASCII prose (no JSON escaping needed).
func makeContent(n int) string {
	const words = "the quick brown fox jumps over the lazy dog "
	b := make([]byte, n)
	for i := range b {
		b[i] = words[i%len(words)]
	}
	return string(b)
}

func (s *Server) appendChat(dst []byte, id uint64, model []byte) []byte {
	dst = append(dst, `{"id":"chatcmpl-mock-`...)
	dst = strconv.AppendUint(dst, id, 10)
	dst = append(dst, `","object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, time.Now().Unix(), 10)
	dst = append(dst, `,"model":`...)
	dst = upstream.AppendJSONString(dst, string(model))
	dst = append(dst, `,"system_fingerprint":`...)
	dst = upstream.AppendJSONString(dst, s.opts.Name)
	dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":"`...)
	dst = append(dst, s.content...)
	dst = append(dst, `","refusal":null},"logprobs":null,"finish_reason":"stop"}],`...)
	return s.appendUsage(dst)
}

func (s *Server) appendCompletion(dst []byte, id uint64, model []byte) []byte {
	dst = append(dst, `{"id":"cmpl-mock-`...)
	dst = strconv.AppendUint(dst, id, 10)
	dst = append(dst, `","object":"text_completion","created":`...)
	dst = strconv.AppendInt(dst, time.Now().Unix(), 10)
	dst = append(dst, `,"model":`...)
	dst = upstream.AppendJSONString(dst, string(model))
	dst = append(dst, `,"system_fingerprint":`...)
	dst = upstream.AppendJSONString(dst, s.opts.Name)
	dst = append(dst, `,"choices":[{"text":"`...)
	dst = append(dst, s.content...)
	dst = append(dst, `","index":0,"logprobs":null,"finish_reason":"stop"}],`...)
	return s.appendUsage(dst)
}

func (s *Server) appendUsage(dst []byte) []byte {
	_, completion := s.UsageFigures()
	dst = append(dst, `"usage":{"prompt_tokens":8,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(completion), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(completion+8), 10)
	return append(dst, "}}"...)
}

// appendEmbeddings answers one embedding per input string (an array input
// counts its elements; anything else counts as one).
func (s *Server) appendEmbeddings(dst []byte, model []byte, input *fastjson.Value) []byte {
	n := 1
	if input != nil && input.Type() == fastjson.TypeArray {
		if a, _ := input.Array(); len(a) > 0 {
			n = len(a)
		}
	}
	dim := max(s.opts.ResponseBytes/8, 1)
	dst = append(dst, `{"object":"list","data":[`...)
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"object":"embedding","index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"embedding":[`...)
		for j := range dim {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, "0.0"...)
			dst = strconv.AppendInt(dst, int64((i+j)%10), 10)
		}
		dst = append(dst, "]}"...)
	}
	dst = append(dst, `],"model":`...)
	dst = upstream.AppendJSONString(dst, string(model))
	dst = append(dst, `,"usage":{"prompt_tokens":8,"total_tokens":8}}`...)
	return dst
}

// appendImages answers n (1..10) image URLs on a reserved domain.
func (s *Server) appendImages(dst []byte, n int) []byte {
	n = min(max(n, 1), 10)
	dst = append(dst, `{"created":`...)
	dst = strconv.AppendInt(dst, time.Now().Unix(), 10)
	dst = append(dst, `,"data":[`...)
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"url":"https://mock.invalid/`...)
		dst = append(dst, url.PathEscape(s.opts.Name)...)
		dst = append(dst, '/')
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `.png","revised_prompt":null}`...)
	}
	return append(dst, "]}"...)
}

func appendModels(dst []byte, o Options) []byte {
	dst = append(dst, `{"object":"list","data":[`...)
	for i, m := range o.Models {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = upstream.AppendJSONString(dst, m)
		dst = append(dst, `,"object":"model","created":1700000000,"owned_by":`...)
		dst = upstream.AppendJSONString(dst, o.Name)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// stream answers with an SSE stream of StreamEvents chunks after delay, then
// "data: [DONE]". When cut is non-nil the stream instead stops after
// cut.After events: with cut.abort the body is broken off (the client sees a
// transport error mid-body), otherwise an error event ends it without [DONE].
func (s *Server) stream(ctx *fasthttp.RequestCtx, surface int, model string, delay time.Duration, cut *injection) *eventReader {
	r := &eventReader{
		s: s, surface: surface, model: model, delay: delay, cut: cut,
		id: s.seq.Add(1), created: time.Now().Unix(), after: -1,
		buf: bufPool.Get(),
	}
	if cut != nil {
		r.after = min(cut.After, s.opts.StreamEvents)
	}
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	// A reader rather than SetBodyStreamWriter: fasthttp writes (and
	// flushes) one chunk per Read, so each event leaves at once, and a Read
	// error breaks the chunked body off the way a dying upstream would.
	ctx.Response.SetBodyStream(r, -1)
	return r
}

// errCut is the read error that breaks a stream off (KindCut).
var errCut = errors.New("mock: stream cut")

// eventReader produces one SSE event per Read. Not safe for concurrent use
// (fasthttp reads it from the connection's goroutine only).
type eventReader struct {
	s       *Server
	surface int
	model   string
	delay   time.Duration
	cut     *injection
	id      uint64
	created int64
	after   int // event index at which cut applies; -1 = none
	next    int // next event index; StreamEvents = [DONE]
	done    bool
	buf     *bytebufferpool.ByteBuffer
	off     int // unread offset in buf
	// usage: send a final usage chunk (choices empty) before [DONE], as
	// OpenAI does for stream_options.include_usage; usageSent once it went.
	usage, usageSent bool
}

func (r *eventReader) Read(p []byte) (int, error) {
	if r.off < len(r.buf.B) {
		n := copy(p, r.buf.B[r.off:])
		r.off += n
		return n, nil
	}
	if r.done {
		return 0, io.EOF
	}
	events := r.s.opts.StreamEvents
	i := r.next
	r.next++
	switch {
	case i == 0 && r.delay > 0:
		time.Sleep(r.delay)
	case i > 0 && r.s.opts.StreamInterval > 0:
		time.Sleep(r.s.opts.StreamInterval)
	}
	switch {
	case i == r.after && r.cut.abort:
		r.done = true
		return 0, errCut
	case i == r.after:
		r.buf.B = append(r.buf.B[:0], "data: "...)
		r.buf.B = appendErrorBody(r.buf.B, r.cut.Status, r.cut.Code, r.cut.message(r.s.opts.Name))
		r.buf.B = append(r.buf.B, "\n\n"...)
		r.done = true
	case i == events && r.usage && !r.usageSent:
		r.buf.B = r.s.appendUsageChunk(r.buf.B[:0], r.surface, r.id, r.created, r.model)
		r.usageSent = true
		r.next-- // [DONE] comes next
	case i == events:
		r.buf.B = append(r.buf.B[:0], "data: [DONE]\n\n"...)
		r.done = true
	default:
		r.buf.B = r.s.appendChunk(r.buf.B[:0], r.surface, r.id, r.created, r.model, i, events)
	}
	n := copy(p, r.buf.B)
	r.off = n
	return n, nil
}

// Close returns the buffer to the pool; fasthttp calls it when the body is
// written or abandoned.
func (r *eventReader) Close() error {
	if r.buf != nil {
		bufPool.Put(r.buf)
		r.buf = nil
	}
	return nil
}

// appendChunk appends event i of n as an SSE "data:" line. The completion
// text is spread over the events; the last one carries finish_reason "stop".
func (s *Server) appendChunk(dst []byte, surface int, id uint64, created int64, model string, i, n int) []byte {
	per := len(s.content) / n
	piece := s.content[i*per : (i+1)*per]
	if i == n-1 {
		piece = s.content[i*per:]
	}
	dst = appendChunkHead(dst, surface, id, created, model)
	dst = append(dst, `,"system_fingerprint":`...)
	dst = upstream.AppendJSONString(dst, s.opts.Name)
	if surface == surfCompletions {
		dst = append(dst, `,"choices":[{"text":"`...)
		dst = append(dst, piece...)
		dst = append(dst, `","index":0,"logprobs":null,"finish_reason":`...)
	} else {
		dst = append(dst, `,"choices":[{"index":0,"delta":{`...)
		if i == 0 {
			dst = append(dst, `"role":"assistant",`...)
		}
		dst = append(dst, `"content":"`...)
		dst = append(dst, piece...)
		dst = append(dst, `"},"logprobs":null,"finish_reason":`...)
	}
	if i == n-1 {
		dst = append(dst, `"stop"`...)
	} else {
		dst = append(dst, "null"...)
	}
	return append(dst, "}]}\n\n"...)
}

// appendUsageChunk appends the final usage chunk of a stream: no choices,
// the usage of the whole answer (appendUsage's figures).
func (s *Server) appendUsageChunk(dst []byte, surface int, id uint64, created int64, model string) []byte {
	dst = appendChunkHead(dst, surface, id, created, model)
	dst = append(dst, `,"choices":[],`...)
	dst = s.appendUsage(dst)
	return append(dst, "\n\n"...)
}

// UsageFigures returns the prompt and completion tokens the mock reports for
// each chat or completions answer (and a stream's usage chunk).
func (s *Server) UsageFigures() (prompt, completion int) { return 8, len(s.content)/4 + 1 }

// writeError writes an OpenAI error envelope with status.
func writeError(ctx *fasthttp.RequestCtx, status int, typ, code, message string) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	b := bufPool.Get()
	b.B = upstream.AppendError(b.B[:0], message, typ, code)
	ctx.SetBody(b.B)
	bufPool.Put(b)
}

// appendErrorBody appends {"error":{...}} for an injected failure; with
// no code, "code" is null as in many real provider errors.
func appendErrorBody(dst []byte, status int, code, message string) []byte {
	if code != "" {
		return upstream.AppendError(dst, message, errorType(status), code)
	}
	dst = append(dst, `{"error":{"message":`...)
	dst = upstream.AppendJSONString(dst, message)
	dst = append(dst, `,"type":`...)
	dst = upstream.AppendJSONString(dst, errorType(status))
	return append(dst, `,"param":null,"code":null}}`...)
}

// errorType is the OpenAI error type a real provider uses for status.
func errorType(status int) string {
	switch {
	case status == 429:
		return "rate_limit_error"
	case status == 401 || status == 403:
		return "authentication_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// appendChunkHead appends the start of one stream chunk of surface, up to
// and including its model: "data: {"id":…,"object":…,"created":…,"model":…".
func appendChunkHead(dst []byte, surface int, id uint64, created int64, model string) []byte {
	dst = append(dst, "data: "...)
	if surface == surfCompletions {
		dst = append(dst, `{"id":"cmpl-mock-`...)
	} else {
		dst = append(dst, `{"id":"chatcmpl-mock-`...)
	}
	dst = strconv.AppendUint(dst, id, 10)
	if surface == surfCompletions {
		dst = append(dst, `","object":"text_completion","created":`...)
	} else {
		dst = append(dst, `","object":"chat.completion.chunk","created":`...)
	}
	dst = strconv.AppendInt(dst, created, 10)
	dst = append(dst, `,"model":`...)
	dst = upstream.AppendJSONString(dst, model)
	return dst
}
