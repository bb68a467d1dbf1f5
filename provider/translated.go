package provider

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/provider/translate"
	"github.com/switchyard/switchyard/router"
)

// How a member that speaks chat serves a client API it does not speak
// (docs/providers.md, Translation): the client's body is translated to the
// chat form, the member's own chat adapter sends it and reads the answer
// back into OpenAI's chat shape, and that is translated into the client's
// shape. Pick chooses a translated adapter only where the provider has no
// native path, so nothing is translated twice.

// clientAPI is one client API served by translation: its surface and its
// translator (package translate).
type clientAPI struct {
	surface   router.Surface
	toChat    func(dst, body []byte, o translate.Options) ([]byte, []string, error)
	fromChat  func(dst, chat, model []byte) ([]byte, error)
	newStream func(model []byte) translate.Stream
}

// clientAPIs are the client APIs a member serves over its chat adapter, by
// surface; nil: none (a surface without a translator is served natively
// or not at all).
var clientAPIs = [router.NumSurfaces]*clientAPI{
	router.SurfaceMessages: {surface: router.SurfaceMessages, toChat: translate.MessagesToChat,
		fromChat: translate.ChatToMessages, newStream: translate.NewMessagesStream},
	router.SurfaceResponses: {surface: router.SurfaceResponses, toChat: translate.ResponsesToChat,
		fromChat: translate.ChatToResponses, newStream: translate.NewResponsesStream},
}

// TranslatedSurfaces is the set of surfaces every member that serves chat
// serves by translation.
func TranslatedSurfaces() router.SurfaceSet {
	var set router.SurfaceSet
	for s, api := range clientAPIs {
		if api != nil {
			set |= 1 << s
		}
	}
	return set
}

// The translated adapters, one per member chat adapter and surface, made
// once so that picking one allocates nothing; nil where the surface has no
// translator. max_tokens becomes max_completion_tokens for openai and
// azure; only openai takes PDF documents as file parts.
var (
	openAIMessages         = viaChatOf(OpenAIAdapter{}, router.SurfaceMessages, translate.Options{MaxCompletionTokens: true, FileInput: true})
	azureMessages          = viaChatOf(azureAdapter{}, router.SurfaceMessages, translate.Options{MaxCompletionTokens: true})
	azureResponses         = viaChatOf(azureAdapter{}, router.SurfaceResponses, translate.Options{MaxCompletionTokens: true})
	geminiMessages         = viaChatOf(geminiAdapter{}, router.SurfaceMessages, translate.Options{})
	geminiResponses        = viaChatOf(geminiAdapter{}, router.SurfaceResponses, translate.Options{})
	anthropicResponses     = viaChatOf(anthropicAdapter{}, router.SurfaceResponses, translate.Options{})
	bedrockMessagesViaChat = viaChatOf(bedrockAdapter{}, router.SurfaceMessages, translate.Options{})
	bedrockResponses       = viaChatOf(bedrockAdapter{}, router.SurfaceResponses, translate.Options{})
	vertexMessagesViaChat  = viaChatOf(vertexOpenAPI{}, router.SurfaceMessages, translate.Options{})
	vertexClaudeResponses  = viaChatOf(vertexClaude{}, router.SurfaceResponses, translate.Options{})
	vertexOpenAPIResponses = viaChatOf(vertexOpenAPI{}, router.SurfaceResponses, translate.Options{})
)

// viaChatOf returns the adapter that serves surface s over inner, or nil
// when s has no translator.
func viaChatOf(inner Adapter, s router.Surface, o translate.Options) *translated {
	if clientAPIs[s] == nil {
		return nil
	}
	return &translated{inner: inner, api: clientAPIs[s], opts: o}
}

// translated serves a client API over a member's chat adapter. Immutable;
// safe for concurrent use. Per request it keeps its work in the Call (see
// translation).
type translated struct {
	inner Adapter
	api   *clientAPI
	opts  translate.Options
}

// translation is what a request's translated attempts hold until the walk
// ends (Call.ReleaseTranslation): the chat body of the latest attempt
// (the attempt's request may point at it), the chat answer read back, the
// tools the translation dropped and the chat-surface Call the inner
// adapter sees.
type translation struct {
	chat, answer, dropped []byte
	call                  Call
}

var translationPool = sync.Pool{New: func() any { return new(translation) }}

// maxKeptTranslation bounds the buffers a pooled translation keeps.
const maxKeptTranslation = 256 << 10

// translation returns c's translation, taking one from the pool first.
func (c *Call) translation() *translation {
	if c.tr == nil {
		c.tr = translationPool.Get().(*translation)
	}
	return c.tr
}

// HoldsTranslation reports whether translated attempts of c hold buffers
// that ReleaseTranslation gives back.
func (c *Call) HoldsTranslation() bool { return c.tr != nil }

// ReleaseTranslation gives back what translated attempts of c held. The
// walk calls it when it returns: an attempt's request is written by then,
// and a stream's decoders have copied what they keep.
func (c *Call) ReleaseTranslation() {
	tr := c.tr
	if tr == nil {
		return
	}
	c.tr = nil
	tr.call = Call{}
	tr.dropped = tr.dropped[:0]
	if cap(tr.chat) > maxKeptTranslation {
		tr.chat = nil
	}
	if cap(tr.answer) > maxKeptTranslation {
		tr.answer = nil
	}
	translationPool.Put(tr)
}

// Surfaces implements Adapter: the client API's surface.
func (t *translated) Surfaces() router.SurfaceSet { return 1 << t.api.surface }

// BuildRequest implements Adapter: the client's body translated to the
// chat form (model_map applied: Options.Model is upstreamModel), then the
// inner adapter's chat request for it. A body the translation refuses is a
// *translate.Error: answered 400 in the client's envelope, no call made.
func (t *translated) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if c.Surface != t.api.surface {
		return errors.New("BUG: translated " + t.api.surface.String() + " adapter got surface " + c.Surface.String())
	}
	tr := c.translation()
	o := t.opts
	o.Model, o.Stream = upstreamModel, c.Stream
	chat, dropped, err := t.api.toChat(tr.chat[:0], c.Body, o)
	tr.chat = chat
	tr.dropped = appendDropped(tr.dropped[:0], dropped)
	if err != nil {
		return err
	}
	tr.call = Call{Surface: router.SurfaceChat, Stream: c.Stream, Body: tr.chat, Model: upstreamModel,
		TraceParent: c.TraceParent, TraceState: c.TraceState}
	return t.inner.BuildRequest(req, ep, &tr.call, upstreamModel)
}

// appendDropped writes the dropped tool types as the header value "a, b",
// each byte that does not belong in a header value replaced by '?'.
func appendDropped(dst []byte, dropped []string) []byte {
	for i, d := range dropped {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		for j := 0; j < len(d); j++ {
			c := d[j]
			if c < 0x20 || c >= 0x7f || c == ',' {
				c = '?'
			}
			dst = append(dst, c)
		}
	}
	return dst
}

// DroppedTools implements ToolDropper: the tools c's latest attempt left
// out, as the value of X-Gateway-Dropped-Tools ("" = none).
func (t *translated) DroppedTools(c *Call) []byte {
	if c.tr == nil {
		return nil
	}
	return c.tr.dropped
}

// ToolDropper is an Adapter that may leave some of the client's tools out
// of the request it sends (a translated one: hosted tools only the client
// API's own provider runs). The walk names them in the answer's
// X-Gateway-Dropped-Tools header.
type ToolDropper interface {
	DroppedTools(c *Call) []byte
}

// ClassifyError implements Adapter: the inner adapter's class, with the
// error in the client API's envelope (Anthropic's on messages).
func (t *translated) ClassifyError(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	cl, env := t.inner.ClassifyError(status, h, body)
	return cl, t.envelope(status, env)
}

// envelope turns an OpenAI error envelope into the client API's.
func (t *translated) envelope(status int, env []byte) []byte {
	if t.api.surface != router.SurfaceMessages {
		return env
	}
	msg, _, _ := envelopeFields(env)
	if msg == "" {
		msg = "upstream answered HTTP " + strconv.Itoa(status)
	}
	return AppendAnthropicError(nil, AnthropicErrorType(status), msg)
}

// envelopeFields reads the message, type and code of an error envelope
// (OpenAI's {"error":{…}} or Anthropic's {"type":"error","error":{…}}).
// The strings are copies: jsonStr's view the parser's memory, which the
// next stream to take the parser (another tenant's) overwrites.
func envelopeFields(env []byte) (msg, typ, code string) {
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(env)
	if err != nil {
		return "", "", ""
	}
	m, _ := jsonStr(v.Get("error", "message"))
	ty, _ := jsonStr(v.Get("error", "type"))
	co, _ := jsonStr(v.Get("error", "code"))
	return strings.Clone(m), strings.Clone(ty), strings.Clone(co)
}

// AnswerUsage implements UsageReader: the upstream's answer is the inner
// adapter's, read as it reads it.
func (t *translated) AnswerUsage(body []byte) (Usage, bool) { return AnswerUsage(t.inner, body) }

// TranslateResponse implements Adapter: the inner adapter's chat answer,
// translated into the client API's.
func (t *translated) TranslateResponse(dst, body []byte, c *Call) ([]byte, error) {
	tr := c.tr
	if tr == nil {
		return dst, errors.New("BUG: translated answer without a translated request")
	}
	chat, err := t.inner.TranslateResponse(tr.answer[:0], body, &tr.call)
	tr.answer = chat
	if err != nil {
		return dst, err
	}
	return t.api.fromChat(dst, chat, c.Model)
}

// NewStream implements Adapter: the inner adapter's chat stream decoder,
// its OpenAI frames translated into the client API's events.
func (t *translated) NewStream(c *Call) StreamDecoder {
	s := translatedStreamPool.Get().(*translatedStream)
	inner := c
	if c.tr != nil {
		inner = &c.tr.call
	}
	*s = translatedStream{inner: t.inner.NewStream(inner), client: t.api.newStream(c.Model), surface: t.api.surface}
	return s
}

// translatedStream runs a chat stream decoder and feeds its frames to the
// client API's translate.Stream. It writes the client's first event only
// from the first chat chunk, so a failure before it (an error status, an
// error event, a stream that ends at once) reaches the walk with nothing
// written and fails over as on any member. Not safe for concurrent use.
type translatedStream struct {
	inner   StreamDecoder
	client  translate.Stream
	surface router.Surface
	// scratch holds the data of a frame with several data lines, joined.
	scratch []byte
}

var translatedStreamPool = sync.Pool{New: func() any { return new(translatedStream) }}

// chatFramePool holds the buffers the inner decoder's frames are read
// into; a stream takes one per Next and gives it back.
var chatFramePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Next implements StreamDecoder.
func (s *translatedStream) Next(dst []byte, r *bufio.Reader) ([]byte, error) {
	buf := chatFramePool.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= 64<<10 {
			chatFramePool.Put(buf)
		}
	}()
	start := len(dst)
	for {
		frames, err := s.inner.Next((*buf)[:0], r)
		*buf = frames[:0]
		var done bool
		var cerr error
		if dst, done, cerr = s.frames(dst, frames); cerr != nil {
			return s.fail(dst, cerr)
		}
		if done || err == io.EOF {
			if dst, cerr = s.client.Done(dst); cerr != nil {
				return s.fail(dst, cerr)
			}
			return dst, io.EOF
		}
		if err != nil {
			return s.fail(dst, err)
		}
		if len(dst) > start {
			return dst, nil
		}
	}
}

// frames feeds the data of each SSE event in frames (its data lines joined,
// as a client's parser reads them) to the client stream; done reports the
// chat stream's [DONE].
func (s *translatedStream) frames(dst, frames []byte) (out []byte, done bool, err error) {
	for len(frames) > 0 {
		var data []byte
		lines := 0
		for len(frames) > 0 {
			n, _ := lineLen(frames)
			line := frames[:n]
			frames = frames[n:]
			if line[0] == '\n' || line[0] == '\r' {
				break // the event's blank line
			}
			at, ok := dataField(line)
			if !ok {
				continue
			}
			a, e := fieldValue(line, at)
			switch lines {
			case 0:
				data = line[a:e]
			case 1:
				s.scratch = append(append(append(s.scratch[:0], data...), '\n'), line[a:e]...)
				data = s.scratch
			default:
				s.scratch = append(append(s.scratch, '\n'), line[a:e]...)
				data = s.scratch
			}
			lines++
		}
		if lines == 0 {
			continue
		}
		if string(bytes.TrimSpace(data)) == doneData {
			return dst, true, nil
		}
		if dst, err = s.client.Chunk(dst, data); err != nil {
			return dst, false, err
		}
	}
	return dst, false, nil
}

// fail ends the client's stream with its error event for err (an upstream
// StreamError keeps its class and status; a read timeout is a timeout; a
// translation error, an upstream that broke the chat protocol, is a
// transport failure). The returned error is Framed: after the commit the
// relay writes the event as it is; before it the walk fails over and
// answers with the error's Body, the client's envelope.
func (s *translatedStream) fail(dst []byte, err error) ([]byte, error) {
	cl, status, msg := ClassTransport, fasthttp.StatusBadGateway, ""
	typ, code := TypeUpstream, CodeUpstreamError
	var se *StreamError
	switch {
	case errors.As(err, &se):
		cl, status = se.Class, se.Status
		m, ty, co := envelopeFields(se.Body)
		msg = m
		if ty != "" {
			typ = ty
		}
		if co != "" {
			code = co
		}
		if status < 400 {
			status = fasthttp.StatusBadGateway
		}
	case isTimeout(err):
		cl, status, msg, code = ClassTimeout, fasthttp.StatusGatewayTimeout, "upstream stream timed out", CodeGatewayTimeout
	default:
		msg = err.Error()
	}
	if msg == "" {
		msg = "upstream stream failed"
	}
	var body []byte
	if s.surface == router.SurfaceMessages {
		body = AppendAnthropicError(nil, AnthropicErrorType(status), msg)
	} else {
		body = AppendError(nil, msg, typ, code)
	}
	return s.client.Fail(dst, status, typ, code, msg), &StreamError{Class: cl, Status: status, Body: body, Framed: true}
}

// isTimeout reports whether a read error is a deadline (the walk's attempt
// or request deadline on the upstream connection).
func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, fasthttp.ErrTimeout) {
		return true
	}
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// Usage implements UsageReporter: the inner decoder's, the chat stream's
// own usage (which it always reports: the translation asks for it).
func (s *translatedStream) Usage() Usage {
	if ur, ok := s.inner.(UsageReporter); ok {
		return ur.Usage()
	}
	return Usage{}
}

// release implements pooledDecoder.
func (s *translatedStream) release() {
	ReleaseDecoder(s.inner)
	s.client.Release()
	scratch := s.scratch[:0]
	if cap(scratch) > 64<<10 {
		scratch = nil
	}
	*s = translatedStream{scratch: scratch}
	translatedStreamPool.Put(s)
}
