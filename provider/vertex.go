package provider

import (
	"bytes"
	"errors"
	"net/url"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/router"
)

// vertexAdapter speaks Vertex AI: Claude models through rawPredict with
// Anthropic's body, every other model through the OpenAI-compatible
// endpoint. It picks by the model sent upstream (see Pick).
type vertexAdapter struct{}

// Surfaces implements Adapter: chat, and messages for Claude models.
func (vertexAdapter) Surfaces() router.SurfaceSet { return vertexSurfaces }

func isClaude(m []byte) bool { return bytes.HasPrefix(m, []byte("claude-")) }

// The methods a vertexAdapter never has called: Pick replaces it.
func (vertexAdapter) BuildRequest(*fasthttp.Request, *Endpoint, *Call, []byte) error {
	return errors.New("BUG: vertexAdapter.BuildRequest without Pick")
}
func (vertexAdapter) ClassifyError(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	return classifyOpenAICompatible(status, h, body)
}
func (vertexAdapter) TranslateResponse(dst, body []byte, c *Call) ([]byte, error) {
	return nil, errors.New("BUG: vertexAdapter.TranslateResponse without Pick")
}
func (vertexAdapter) NewStream(c *Call) StreamDecoder { return OpenAIAdapter{}.NewStream(c) }

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
	dst = append(dst, '{')
	hasVersion, wrote := false, false
	n, err := objectMembers(body, func(key []byte, ks, vs, end int) {
		switch {
		case dropModel && keyIsModel(key):
		case keyIsModel(key): // count_tokens keeps it, as sent upstream
			if wrote {
				dst = append(dst, ',')
			}
			dst = AppendJSONString(append(dst, body[ks:vs]...), byteconv.String(model))
			wrote = true
		default:
			if string(key) == "anthropic_version" {
				hasVersion = true
			}
			if wrote {
				dst = append(dst, ',')
			}
			dst = append(dst, body[ks:end]...)
			wrote = true
		}
	})
	if err != nil {
		if n == 0 { // not an object: nothing written
			return dst[:len(dst)-1], err
		}
		return dst, err
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
type vertexOpenAPI struct{ OpenAIAdapter }

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
