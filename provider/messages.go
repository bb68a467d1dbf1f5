package provider

import (
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/router"
)

// messagesAdapter passes the messages surface through to Anthropic's
// Messages API: POST {base_url}/v1/messages (or /v1/messages/count_tokens)
// with the client's body byte for byte (only "model" rewritten by
// model_map), the target's x-api-key, and of the client's headers only
// anthropic-version (default AnthropicVersion) and anthropic-beta. Answers,
// error bodies and streams come back as Anthropic sent them. Stateless.
type messagesAdapter struct{}

// Client headers the pass-through forwards.
const (
	headerAnthropicVersion = "anthropic-version"
	headerAnthropicBeta    = "anthropic-beta"
)

// The Messages pass-through's paths under base_url.
const (
	messagesPath    = "/v1/messages"
	countTokensPath = "/v1/messages/count_tokens"
)

// uriPaths lists the paths under base_url it sends to (see Prepare).
func (messagesAdapter) uriPaths() []string { return []string{messagesPath, countTokensPath} }

// Surfaces implements Adapter: messages.
func (messagesAdapter) Surfaces() router.SurfaceSet { return 1 << router.SurfaceMessages }

// BuildRequest implements Adapter.
func (messagesAdapter) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if c.Surface != router.SurfaceMessages {
		return errors.New("BUG: the Messages pass-through got surface " + c.Surface.String())
	}
	req.Header.SetMethod(fasthttp.MethodPost)
	path := messagesPath
	if c.CountTokens {
		path = countTokensPath
	}
	ep.setRequestURI(req, path)
	req.Header.SetContentType("application/json")
	if ep.APIKey != "" {
		req.Header.Set("x-api-key", ep.APIKey)
	}
	var version []byte
	if c.Header != nil {
		version = c.Header.Peek(headerAnthropicVersion)
	}
	if len(version) > 0 {
		req.Header.SetBytesV(headerAnthropicVersion, version)
	} else {
		req.Header.Set(headerAnthropicVersion, AnthropicVersion)
	}
	if c.Header != nil {
		// Every copy: a client may list its betas in one header or several.
		for _, v := range c.Header.PeekAll(headerAnthropicBeta) {
			req.Header.AddBytesV(headerAnthropicBeta, v)
		}
	}
	if c.Stream {
		req.Header.Set(fasthttp.HeaderAccept, "text/event-stream")
	}
	return setPassThroughBody(req, c, upstreamModel)
}

// ClassifyError implements Adapter: classes as on chat (429 rate limit,
// 408/5xx with 529 server, 401/403 auth, "prompt is too long" a context
// overflow). The envelope is Anthropic's body as it came when it is one,
// else one built from the status.
func (messagesAdapter) ClassifyError(status int, _ *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	p := parserPool.Get()
	defer parserPool.Put(p)
	msg := ""
	shaped := false
	if v, err := p.ParseBytes(body); err == nil {
		e := v.Get("error")
		shaped = v.Type() == fastjson.TypeObject && e != nil && e.Type() == fastjson.TypeObject
		msg, _ = jsonStr(v.Get("error", "message"))
	}
	cl := anthropicClass(status, msg)
	if shaped {
		return cl, body
	}
	if msg == "" {
		msg = "anthropic answered HTTP " + strconv.Itoa(status)
	}
	return cl, AppendAnthropicError(nil, AnthropicErrorType(status), msg)
}

// TranslateResponse implements Adapter: pass-through.
func (messagesAdapter) TranslateResponse(dst, body []byte, _ *Call) ([]byte, error) {
	return append(dst, body...), nil
}

// NewStream implements Adapter: a relay of named events.
func (messagesAdapter) NewStream(*Call) StreamDecoder { return newEventStream(messagesEvents) }
