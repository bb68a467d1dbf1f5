package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/router"
)

// OpenAIAdapter speaks to any OpenAI-compatible server (OpenAI, vLLM,
// SGLang, Ollama, llama.cpp…). The request body is forwarded byte for byte
// except the top-level "model" value when model_map rewrites it; answers
// and streams pass through unchanged. Stateless.
type OpenAIAdapter struct{}

// openAIPaths is the path under base_url of each surface openai serves; ""
// for one it does not (messages).
var openAIPaths = [router.NumSurfaces]string{
	router.SurfaceChat:        "/chat/completions",
	router.SurfaceCompletions: "/completions",
	router.SurfaceEmbeddings:  "/embeddings",
	router.SurfaceImages:      "/images/generations",
	router.SurfaceResponses:   "/responses",
}

// uriPaths lists the paths under base_url it sends to (see Prepare).
func (OpenAIAdapter) uriPaths() []string {
	var p []string
	for _, path := range openAIPaths {
		if path != "" {
			p = append(p, path)
		}
	}
	return p
}

// Surfaces implements Adapter: every surface but messages.
func (OpenAIAdapter) Surfaces() router.SurfaceSet { return openAISurfaces }

// BuildRequest implements Adapter: POST {base_url}{path}, the target's key
// as a bearer token when set, the client's body with the model rewritten
// when upstreamModel differs from c.Model.
func (OpenAIAdapter) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if c.Surface >= router.NumSurfaces || openAIPaths[c.Surface] == "" {
		return errors.New("this provider does not serve " + c.Surface.String())
	}
	req.Header.SetMethod(fasthttp.MethodPost)
	ep.setRequestURI(req, openAIPaths[c.Surface])
	req.Header.SetContentType("application/json")
	ep.setAPIKeyBearer(req)
	return setPassThroughBody(req, c, upstreamModel)
}

// setPassThroughBody sets the client's body as req's, byte for byte, with
// the top-level "model" rewritten when upstreamModel differs from c.Model.
func setPassThroughBody(req *fasthttp.Request, c *Call, upstreamModel []byte) error {
	if bytes.Equal(upstreamModel, c.Model) {
		// Fast path: the body goes out as the client sent it. SetBodyRaw
		// keeps a reference; the body outlives every attempt of the walk.
		req.SetBodyRaw(c.Body)
		return nil
	}
	// Rewrite into the request's own (pooled) body buffer. A reset request
	// has none, and Body() alone would be nil: AppendBody(nil) takes one
	// from the pool first.
	req.AppendBody(nil)
	body, err := RewriteModel(req.Body()[:0], c.Body, upstreamModel)
	if err != nil {
		return err
	}
	req.SwapBody(body)
	return nil
}

// ClassifyError implements Adapter. The envelope is the upstream body when
// it is OpenAI-shaped (a JSON object with an "error" object); it may alias
// body.
func (OpenAIAdapter) ClassifyError(status int, _ *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(body)
	var e *fastjson.Value
	if err == nil {
		e = v.Get("error")
	}
	class := classifyStatus(status)
	if class == ClassClient && status == fasthttp.StatusBadRequest && e != nil &&
		string(e.GetStringBytes("code")) == "context_length_exceeded" {
		class = ClassContextLength
	}
	if e != nil && e.Type() == fastjson.TypeObject {
		return class, body
	}
	msg := "upstream answered HTTP " + strconv.Itoa(status)
	if e != nil && e.Type() == fastjson.TypeString {
		msg = string(e.GetStringBytes())
	}
	typ, code := TypeInvalidRequest, CodeInvalidRequest
	switch class {
	case ClassServer, ClassAuth, ClassTransport, ClassTimeout:
		typ, code = TypeUpstream, CodeUpstreamError
	case ClassRateLimited:
		typ, code = TypeRateLimit, CodeRateLimitExceeded
	}
	return class, AppendError(nil, msg, typ, code)
}

// classifyStatus maps a non-2xx HTTP status to its class (docs/routing.md, 5).
func classifyStatus(status int) Class {
	switch {
	case status == fasthttp.StatusRequestTimeout || status >= 500:
		return ClassServer
	case status == fasthttp.StatusTooManyRequests:
		return ClassRateLimited
	case status == fasthttp.StatusUnauthorized || status == fasthttp.StatusForbidden:
		return ClassAuth
	case status >= 400 && status < 500:
		return ClassClient
	}
	// 1xx, 3xx (the gateway follows no redirect: a moved endpoint is a
	// misconfiguration, not the client's problem) or a 2xx not accepted as
	// success: a protocol failure, failover-safe, answered 502.
	return ClassTransport
}

// TranslateResponse implements Adapter: pass-through.
func (OpenAIAdapter) TranslateResponse(dst, body []byte, _ *Call) ([]byte, error) {
	return append(dst, body...), nil
}

// NewStream implements Adapter: an SSE relay; on responses, of named events.
func (OpenAIAdapter) NewStream(c *Call) StreamDecoder {
	if c.Surface == router.SurfaceResponses {
		return newEventStream(responsesEvents)
	}
	d := ssePool.Get().(*SSEDecoder)
	*d = SSEDecoder{}
	return d
}

// RewriteModel appends body to dst with the value of every top-level
// "model" key replaced by the JSON string model; every other byte is kept.
// Nested "model" keys (inside messages, tools, metadata) are not touched.
// It returns an error when body is not a JSON object or has no top-level
// string "model".
func RewriteModel(dst, body, model []byte) ([]byte, error) {
	last := 0
	found := false
	n, err := objectMembers(body, func(key []byte, _, vs, end int) {
		if body[vs] == '"' && keyIsModel(key) {
			dst = append(dst, body[last:vs]...)
			dst = AppendJSONString(dst, byteconv.String(model))
			last = end
			found = true
		}
	})
	switch {
	case err != nil:
		return dst, err
	case n == 0:
		return dst, errors.New("body has no model")
	case !found:
		return dst, errors.New("body has no string model")
	}
	return append(dst, body[last:]...), nil
}

// objectMembers walks the top-level members of the JSON object body in
// order, calling member with each one's raw (still escaped) key and
// offsets: ks where its key's opening quote is, vs where its value begins,
// end just past its value. It returns how many members the object has, or
// an error for a body that is not a well-formed JSON object (member has
// seen the members before the fault). Allocation-free but for the error.
func objectMembers(body []byte, member func(key []byte, ks, vs, end int)) (int, error) {
	s := scanner{b: body}
	s.ws()
	if !s.eat('{') {
		return 0, errors.New("body is not a JSON object")
	}
	s.ws()
	if s.eat('}') {
		return 0, nil
	}
	for n := 1; ; n++ {
		s.ws()
		ks := s.i
		if !s.str() {
			return n, errors.New("malformed JSON object key")
		}
		key := body[ks+1 : s.i-1]
		s.ws()
		if !s.eat(':') {
			return n, errors.New("malformed JSON object")
		}
		s.ws()
		vs := s.i
		if !s.value(0) {
			return n, errors.New("malformed JSON value")
		}
		member(key, ks, vs, s.i)
		s.ws()
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
			return n, nil
		}
		return n, errors.New("malformed JSON object")
	}
}

// keyIsModel reports whether a raw (still escaped) key spells "model".
func keyIsModel(raw []byte) bool {
	if string(raw) == "model" {
		return true
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	// Slow path: an escaped key such as "mod\u0065l".
	var k string
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	return json.Unmarshal(q, &k) == nil && k == "model"
}

// scanner is a minimal JSON scanner that only finds value boundaries; the
// hot path validated the body with fastjson already.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str skips a string starting at s.i (its opening quote).
func (s *scanner) str() bool {
	if !s.eat('"') {
		return false
	}
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			return false
		}
		k := s.i + j
		// The quote is escaped when an odd run of backslashes precedes it.
		n := 0
		for p := k - 1; p >= s.i && s.b[p] == '\\'; p-- {
			n++
		}
		s.i = k + 1
		if n%2 == 0 {
			return true
		}
	}
}

const maxDepth = 512

// member skips one object member, "key": value, its value at depth.
func (s *scanner) member(depth int) bool {
	if !s.str() {
		return false
	}
	s.ws()
	if !s.eat(':') {
		return false
	}
	s.ws()
	return s.value(depth)
}

// value skips one JSON value.
func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) || depth > maxDepth {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"':
		return s.str()
	case '{', '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		s.i++
		s.ws()
		if s.eat(end) {
			return true
		}
		for {
			s.ws()
			if c == '{' && !s.member(depth+1) || c == '[' && !s.value(depth+1) {
				return false
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			return s.eat(end)
		}
	default:
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}
