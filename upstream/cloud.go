package upstream

import (
	"bytes"
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/router"
)

// The azure, vertex and gemini adapters (README, Providers). Their bodies
// are OpenAI's or Anthropic's: they reuse those adapters and change the
// URL, the credential header and a few classification rules.

func init() {
	adapterFactories[config.ProviderAzure] = func() Adapter { return azureAdapter{} }
	adapterFactories[config.ProviderVertex] = func() Adapter { return vertexAdapter{} }
	adapterFactories[config.ProviderGemini] = func() Adapter { return geminiAdapter{} }
}

// setBearer sets Authorization from the token source, else from the API
// key as a bearer token; ErrNoToken when the source has no token.
func setBearer(req *fasthttp.Request, ep *Endpoint) error {
	if ep.Token != nil {
		h, err := ep.Token.Authorization(time.Now())
		if err != nil {
			return err
		}
		req.Header.SetBytesV(fasthttp.HeaderAuthorization, h)
		return nil
	}
	if ep.APIKey != "" {
		var buf [256]byte
		req.Header.SetBytesV(fasthttp.HeaderAuthorization, append(append(buf[:0], "Bearer "...), ep.APIKey...))
	}
	return nil
}

// setURI sets req's URI to the joined parts with path normalizing off,
// assembled in a stack buffer the request copies.
func setURI(req *fasthttp.Request, parts ...[]byte) {
	var buf [512]byte
	u := buf[:0]
	for _, p := range parts {
		u = append(u, p...)
	}
	req.URI().DisablePathNormalizing = true
	req.SetRequestURIBytes(u)
}

// overflowMessages are the context-length messages of Google's and
// Azure's OpenAI-compatible endpoints besides OpenAI's code.
var overflowMessages = []string{"exceeds the maximum number of tokens", "maximum context length", "context_length_exceeded"}

// classifyOpenAICompatible is openAIAdapter.ClassifyError, with a 400
// whose message says the input is too long counted as an overflow.
func classifyOpenAICompatible(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	cl, env := openAIAdapter{}.ClassifyError(status, h, body)
	if cl == ClassClient && status == fasthttp.StatusBadRequest {
		for _, m := range overflowMessages {
			if containsFold(byteconv.String(body), m) {
				return ClassContextLength, env
			}
		}
	}
	return cl, env
}

// geminiAdapter speaks the Gemini API's OpenAI-compatible endpoint: chat
// and embeddings, bodies passed through, the key as a bearer token.
type geminiAdapter struct{ openAIAdapter }

var geminiPaths = []string{"/chat/completions", "/embeddings"}

func (geminiAdapter) uriPaths() []string { return geminiPaths }

// Surfaces implements Adapter: chat and embeddings.
func (geminiAdapter) Surfaces() router.SurfaceSet {
	return 1<<router.SurfaceChat | 1<<router.SurfaceEmbeddings
}

// BuildRequest implements Adapter.
func (a geminiAdapter) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if a.Surfaces()&(1<<c.Surface) == 0 {
		return errors.New("gemini does not serve " + c.Surface.String())
	}
	return a.openAIAdapter.BuildRequest(req, ep, c, upstreamModel)
}

// ClassifyError implements Adapter.
func (geminiAdapter) ClassifyError(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	return classifyOpenAICompatible(status, h, body)
}

// azureAdapter speaks Azure OpenAI: the v1 API (OpenAI's paths under
// base_url) or, with an API version, classic deployment URLs. The key goes
// in api-key; an Entra ID token as a bearer token. Bodies pass through.
type azureAdapter struct{ openAIAdapter }

// uriPaths lists the v1 API's paths (classic URLs are per deployment).
func (a azureAdapter) uriPaths() []string { return a.openAIAdapter.uriPaths() }

var (
	azureDeployments = []byte("/openai/deployments/")
	azureAPIVersionQ = []byte("?api-version=")
	headerAPIKey     = []byte("api-key")
)

// BuildRequest implements Adapter.
func (azureAdapter) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if c.Surface >= router.NumSurfaces || openAIPaths[c.Surface] == "" ||
		ep.APIVersion != "" && c.Surface == router.SurfaceResponses {
		return errors.New("this azure target does not serve " + c.Surface.String())
	}
	req.Header.SetMethod(fasthttp.MethodPost)
	if ep.APIVersion == "" {
		ep.setRequestURI(req, openAIPaths[c.Surface])
	} else {
		var seg [128]byte
		setURI(req, byteconv.Bytes(ep.BaseURL), azureDeployments, appendModelSegment(seg[:0], upstreamModel),
			byteconv.Bytes(openAIPaths[c.Surface]), azureAPIVersionQ, byteconv.Bytes(ep.APIVersion))
	}
	req.Header.SetContentType("application/json")
	if ep.Token != nil {
		if err := setBearer(req, ep); err != nil {
			return err
		}
	} else if ep.APIKey != "" {
		req.Header.SetCanonical(headerAPIKey, byteconv.Bytes(ep.APIKey))
	}
	return setPassThroughBody(req, c, upstreamModel)
}

var headerRetryAfterMs = []byte("retry-after-ms")

// ClassifyError implements Adapter. Azure states a 429's wait in
// retry-after-ms as well as (or instead of) Retry-After: when only the
// former is there, it becomes Retry-After (whole seconds, rounded up) so
// the park and the client see it. A content-filter 400 is the client's, as
// any other 400.
func (azureAdapter) ClassifyError(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	if status == fasthttp.StatusTooManyRequests && h != nil && len(h.Peek(fasthttp.HeaderRetryAfter)) == 0 {
		if ms, err := strconv.ParseInt(byteconv.String(h.PeekBytes(headerRetryAfterMs)), 10, 64); err == nil && ms >= 0 {
			h.Set(fasthttp.HeaderRetryAfter, strconv.FormatInt((ms+999)/1000, 10))
		}
	}
	return classifyOpenAICompatible(status, h, body)
}

// vertexAdapter speaks Vertex AI: Claude models through rawPredict with
// Anthropic's body, every other model through the OpenAI-compatible
// endpoint. It picks by the model sent upstream (see forModel).
type vertexAdapter struct{}

// Surfaces implements Adapter: chat, and messages for Claude models.
func (vertexAdapter) Surfaces() router.SurfaceSet {
	return 1<<router.SurfaceChat | 1<<router.SurfaceMessages
}

// forSurface implements surfaceAdapter; the model picks the rest.
func (vertexAdapter) forSurface(s router.Surface) Adapter {
	if s == router.SurfaceMessages {
		return vertexMessages{}
	}
	return vertexAdapter{}
}

// forModel implements modelAdapter.
func (vertexAdapter) forModel(m []byte) Adapter {
	if isClaude(m) {
		return vertexClaude{}
	}
	return vertexOpenAPI{}
}

func isClaude(m []byte) bool { return bytes.HasPrefix(m, []byte("claude-")) }

// The methods a vertexAdapter never has called: forModel replaces it.
func (vertexAdapter) BuildRequest(*fasthttp.Request, *Endpoint, *Call, []byte) error {
	return errors.New("BUG: vertexAdapter.BuildRequest without forModel")
}
func (vertexAdapter) ClassifyError(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	return classifyOpenAICompatible(status, h, body)
}
func (vertexAdapter) TranslateResponse(dst, body []byte, c *Call) ([]byte, error) {
	return nil, errors.New("BUG: vertexAdapter.TranslateResponse without forModel")
}
func (vertexAdapter) NewStream(c *Call) StreamDecoder { return openAIAdapter{}.NewStream(c) }

// vertexAnthropicVersion is the anthropic_version Vertex requires.
const vertexAnthropicVersion = "vertex-2023-10-16"

var (
	vertexProjects  = []byte("/v1/projects/")
	vertexLocations = []byte("/locations/")
	vertexAnthropic = []byte("/publishers/anthropic/models/")
	vertexOpenAPIP  = []byte("/endpoints/openapi/chat/completions")
	vertexRaw       = []byte(":rawPredict")
	vertexStreamRaw = []byte(":streamRawPredict")
	vertexCount     = []byte("count-tokens:rawPredict")
	vertexVersionKV = []byte(`"anthropic_version":"` + vertexAnthropicVersion + `"`)
)

// setVertexClaudeURI sets {base}/v1/projects/{p}/locations/{r}/publishers/anthropic/models/{model}:rawPredict
// (:streamRawPredict for a stream; count-tokens:rawPredict for count_tokens).
func setVertexClaudeURI(req *fasthttp.Request, ep *Endpoint, c *Call, model []byte) {
	tail := vertexRaw
	// Escaped as the Anthropic SDK's vertex option does (url.PathEscape:
	// "@" of a versioned id stays); the ":" specifier that follows keeps
	// an id of dots from being a dot-segment.
	m := byteconv.Bytes(url.PathEscape(byteconv.String(model)))
	switch {
	case c.CountTokens:
		m, tail = nil, vertexCount
	case c.Stream:
		tail = vertexStreamRaw
	}
	setURI(req, byteconv.Bytes(ep.BaseURL), vertexProjects, byteconv.Bytes(ep.Project), vertexLocations,
		byteconv.Bytes(ep.Region), vertexAnthropic, m, tail)
}

// vertexClaude serves chat for a Claude model: the anthropic translation,
// sent to rawPredict.
type vertexClaude struct{ anthropicAdapter }

// BuildRequest implements Adapter.
func (vertexClaude) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if c.Surface != router.SurfaceChat {
		return errNotChat
	}
	body, err := anthropicRequestBody(req.SwapBody(nil)[:0], c, upstreamModel)
	if err == nil {
		body, err = vertexBody(body, upstreamModel)
	}
	req.SwapBody(body)
	if err != nil {
		return err
	}
	req.Header.SetMethod(fasthttp.MethodPost)
	setVertexClaudeURI(req, ep, c, upstreamModel)
	req.Header.SetContentType("application/json")
	if c.Stream {
		req.Header.Set(fasthttp.HeaderAccept, "text/event-stream")
	}
	return setBearer(req, ep)
}

// vertexBody turns the Messages body anthropicRequestBody wrote, which
// begins {"model":"…",, into Vertex's: the model out, anthropic_version in.
func vertexBody(body, model []byte) ([]byte, error) {
	var pre [160]byte
	head := AppendJSONString(append(pre[:0], `{"model":`...), byteconv.String(model))
	head = append(head, ',')
	if !bytes.HasPrefix(body, head) {
		return body, errors.New("BUG: anthropic request body does not begin with its model")
	}
	out := make([]byte, 0, len(body)-len(head)+len(vertexVersionKV)+2)
	out = append(append(append(out, '{'), vertexVersionKV...), ',')
	return append(out, body[len(head):]...), nil
}

// vertexMessagesBody appends the client's Messages body to dst with its
// top-level "model" member removed (dropModel) and anthropic_version added
// when the body has none; every other byte is kept.
func vertexMessagesBody(dst, body, model []byte, dropModel bool) ([]byte, error) {
	s := scanner{b: body}
	s.ws()
	if !s.eat('{') {
		return dst, errors.New("body is not a JSON object")
	}
	dst = append(dst, '{')
	hasVersion, wrote := false, false
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			ms := s.i
			if !s.str() {
				return dst, errors.New("malformed JSON object key")
			}
			key := body[ms+1 : s.i-1]
			s.ws()
			if !s.eat(':') {
				return dst, errors.New("malformed JSON object")
			}
			s.ws()
			vs := s.i
			if !s.value(0) {
				return dst, errors.New("malformed JSON value")
			}
			switch {
			case dropModel && keyIsModel(key):
			case keyIsModel(key): // count_tokens keeps it, as sent upstream
				if wrote {
					dst = append(dst, ',')
				}
				dst = AppendJSONString(append(dst, body[ms:vs]...), byteconv.String(model))
				wrote = true
			default:
				if string(key) == "anthropic_version" {
					hasVersion = true
				}
				if wrote {
					dst = append(dst, ',')
				}
				dst = append(dst, body[ms:s.i]...)
				wrote = true
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			if s.eat('}') {
				break
			}
			return dst, errors.New("malformed JSON object")
		}
	}
	if !hasVersion {
		if wrote {
			dst = append(dst, ',')
		}
		dst = append(dst, vertexVersionKV...)
	}
	return append(dst, '}'), nil
}

// vertexMessages serves the messages surface: the client's Messages body
// with model removed and anthropic_version added, to rawPredict. A
// non-Claude model cannot be asked through it.
type vertexMessages struct{ messagesAdapter }

// BuildRequest implements Adapter.
func (vertexMessages) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if !isClaude(upstreamModel) {
		return errors.New("vertex serves /v1/messages only for claude- models")
	}
	req.Header.SetMethod(fasthttp.MethodPost)
	setVertexClaudeURI(req, ep, c, upstreamModel)
	req.Header.SetContentType("application/json")
	if c.Header != nil {
		for _, v := range c.Header.PeekAll(headerAnthropicBeta) {
			req.Header.AddBytesV(headerAnthropicBeta, v)
		}
	}
	if c.Stream {
		req.Header.Set(fasthttp.HeaderAccept, "text/event-stream")
	}
	if err := setBearer(req, ep); err != nil {
		return err
	}
	req.AppendBody(nil)
	body, err := vertexMessagesBody(req.Body()[:0], c.Body, upstreamModel, !c.CountTokens)
	if err != nil {
		return err
	}
	req.SwapBody(body)
	return nil
}

// vertexOpenAPI serves chat for a non-Claude model through Vertex's
// OpenAI-compatible endpoint, body passed through.
type vertexOpenAPI struct{ openAIAdapter }

// BuildRequest implements Adapter.
func (vertexOpenAPI) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if c.Surface != router.SurfaceChat {
		return errors.New("vertex serves " + c.Surface.String() + " only for claude- models")
	}
	req.Header.SetMethod(fasthttp.MethodPost)
	setURI(req, byteconv.Bytes(ep.BaseURL), vertexProjects, byteconv.Bytes(ep.Project), vertexLocations,
		byteconv.Bytes(ep.Region), vertexOpenAPIP)
	req.Header.SetContentType("application/json")
	if err := setBearer(req, ep); err != nil {
		return err
	}
	return setPassThroughBody(req, c, upstreamModel)
}

// ClassifyError implements Adapter.
func (vertexOpenAPI) ClassifyError(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	return classifyOpenAICompatible(status, h, body)
}
