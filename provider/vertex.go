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
// top-level "model" member removed (dropModel; else its value made model),
// its anthropic_beta members left out and returned (their flags go in the
// anthropic-beta header: setVertexBetas), and anthropic_version added when
// the body has none; every other byte is kept. Keys are compared unescaped,
// as Vertex's parser reads them.
func vertexMessagesBody(dst, body, model []byte, dropModel bool) ([]byte, [][]byte, error) {
	start := len(dst)
	dst = append(dst, '{')
	hasVersion, wrote := false, false
	var own [][]byte // the body's anthropic_beta values
	_, err := objectMembers(body, func(raw []byte, ks, vs, end int) {
		key := memberKey(raw)
		switch {
		case key == "model" && dropModel:
			return
		case key == "anthropic_beta":
			own = append(own, body[vs:end])
			return
		case key == "anthropic_version":
			hasVersion = true
		}
		if wrote {
			dst = append(dst, ',')
		}
		if key == "model" { // count_tokens keeps it, as sent upstream
			dst = AppendJSONString(append(dst, body[ks:vs]...), byteconv.String(model))
		} else {
			dst = append(dst, body[ks:end]...)
		}
		wrote = true
	})
	if err != nil {
		return dst[:start], nil, err
	}
	if !hasVersion {
		if wrote {
			dst = append(dst, ',')
		}
		dst = append(dst, vertexVersionKV...)
	}
	return append(dst, '}'), own, nil
}

// vertexMessages serves the messages surface: the client's Messages body
// with model removed and anthropic_version added, to rawPredict, with the
// anthropic-beta flags Vertex accepts. A non-Claude model cannot be asked
// through it.
type vertexMessages struct{ messagesAdapter }

// BuildRequest implements Adapter.
func (vertexMessages) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if !isClaude(upstreamModel) {
		return errors.New("vertex serves /v1/messages only for claude- models")
	}
	req.Header.SetMethod(fasthttp.MethodPost)
	setVertexClaudeURI(req, ep, c, upstreamModel)
	req.Header.SetContentType("application/json")
	if c.Stream {
		req.Header.Set(fasthttp.HeaderAccept, "text/event-stream")
	}
	if err := setBearer(req, ep); err != nil {
		return err
	}
	req.AppendBody(nil)
	body, own, err := vertexMessagesBody(req.Body()[:0], c.Body, upstreamModel, !c.CountTokens)
	if err != nil {
		return err
	}
	req.SwapBody(body)
	return setVertexBetas(&req.Header, ep, c, own)
}

// setVertexBetas sets the one anthropic-beta header Vertex gets
// (docs/providers.md, Claude Code on Vertex): the flags of the client's
// anthropic-beta headers (every copy, comma lists split) and of the body's
// own anthropic_beta arrays that the target accepts, under Vertex's name,
// once, in the order first seen; for count_tokens only those of them
// VertexCountTokensBetas holds. No flag accepted: no header.
func setVertexBetas(h *fasthttp.RequestHeader, ep *Endpoint, c *Call, own [][]byte) error {
	f := betaFilter{allowed: ep.anthropicBetas(VertexAnthropicBetas), bare: true}
	if c.CountTokens {
		f.only = VertexCountTokensBetas
	}
	// A stack buffer the header copies: Claude Code's flags fit.
	var buf [256]byte
	v := buf[:0]
	if c.Header != nil {
		for _, list := range c.Header.PeekAll(headerAnthropicBeta) {
			v = f.appendList(v, list)
		}
	}
	for _, arr := range own {
		var err error
		if v, err = f.appendArray(v, arr); err != nil {
			return err
		}
	}
	if f.n == 0 {
		h.Del(headerAnthropicBeta)
		return nil
	}
	h.SetBytesV(headerAnthropicBeta, v)
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
