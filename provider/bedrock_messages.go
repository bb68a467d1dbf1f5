package provider

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/router"
)

// bedrockMessages serves the messages surface of a bedrock target for Claude
// models natively (docs/providers.md, Claude Code on Bedrock): InvokeModel
// (POST {base}/model/{id}/invoke, /invoke-with-response-stream for a
// stream) with the client's Messages body less model and stream, plus
// anthropic_version and the anthropic_beta flags Bedrock accepts; and
// CountTokens for count_tokens. Answers pass through; a stream's
// event-stream frames are relayed as Anthropic's SSE events (invokeStream).
// Requests are signed as chat's are. Stateless.
type bedrockMessages struct {
	signer bedrockAdapter // its SigV4 signing and clock
}

// bedrockAnthropicVersion is the anthropic_version InvokeModel requires of
// a Claude body.
const bedrockAnthropicVersion = "bedrock-2023-05-31"

var (
	anthropicDot     = []byte("anthropic.")
	bedrockVersionKV = []byte(`"anthropic_version":"` + bedrockAnthropicVersion + `"`)
)

// bedrockServesMessagesNatively reports whether a bedrock target serves the
// messages surface natively, through InvokeModel, for the model id it sends
// upstream: Claude models, whose ids (foundation models, cross-region
// inference profiles such as us.anthropic.…, their ARNs) contain
// "anthropic.". Any other model needs the messages ⇄ chat translation.
func bedrockServesMessagesNatively(model []byte) bool {
	return bytes.Contains(model, anthropicDot)
}

// Surfaces implements Adapter.
func (bedrockMessages) Surfaces() router.SurfaceSet { return bedrockSurfaces }

// BuildRequest implements Adapter.
func (m bedrockMessages) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if c.Surface != router.SurfaceMessages {
		return errors.New("BUG: bedrock's Messages adapter got surface " + c.Surface.String())
	}
	if !bedrockServesMessagesNatively(upstreamModel) {
		return badRequest("bedrock serves /v1/messages only for Claude models (a model id containing \"anthropic.\"); " +
			strconv.Quote(string(upstreamModel)) + " is not one")
	}
	body := req.SwapBody(nil)[:0]
	var err error
	model, op := upstreamModel, "/invoke"
	switch {
	case c.CountTokens:
		body, err = appendCountTokensBody(body, c, ep.anthropicBetas(BedrockAnthropicBetas))
		model, op = foundationModelID(upstreamModel), "/count-tokens"
	case c.Stream:
		body, err = appendInvokeBody(body, c.Body, c.Header, ep.anthropicBetas(BedrockAnthropicBetas), false)
		op = "/invoke-with-response-stream"
	default:
		body, err = appendInvokeBody(body, c.Body, c.Header, ep.anthropicBetas(BedrockAnthropicBetas), false)
	}
	req.SwapBody(body)
	if err != nil {
		return err
	}
	setBedrockURI(req, ep, model, op)
	req.Header.SetContentType("application/json")
	switch {
	case ep.APIKey != "":
		req.Header.Set("Authorization", "Bearer "+ep.APIKey)
	case ep.AWSAccessKeyID != "":
		return m.signer.sign(req, ep, body)
	}
	return nil
}

// setBedrockURI sets {base}/model/{model}{op}: the model id escaped as the
// AWS SDKs do (':' too), kept escaped on the wire, with an explicit Host
// header so the signed host stays whatever form the URI is written in.
func setBedrockURI(req *fasthttp.Request, ep *Endpoint, model []byte, op string) {
	// A stack buffer the request copies: most URIs fit.
	var buf [256]byte
	uri := append(buf[:0], ep.BaseURL...)
	uri = append(uri, "/model/"...)
	uri = appendModelSegment(uri, model)
	uri = append(uri, op...)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURIBytes(uri)
	req.URI().DisablePathNormalizing = true
	req.Header.SetHostBytes(req.URI().Host())
}

// foundationModelID returns the foundation-model id CountTokens takes for a
// Claude id sent upstream: an ARN's resource name (after its last "/") when
// that names the model, less a cross-region inference profile's
// region-group prefix (us., eu., apac., global., us-gov., …: lowercase
// letters and hyphens before "anthropic."). Other ids are returned as they
// are. The result still contains "anthropic.", so it is never a
// dot-segment.
func foundationModelID(id []byte) []byte {
	if i := bytes.LastIndexByte(id, '/'); i >= 0 && bytes.Contains(id[i+1:], anthropicDot) {
		id = id[i+1:]
	}
	i := bytes.Index(id, anthropicDot)
	if i < 2 || id[i-1] != '.' {
		return id
	}
	for _, c := range id[:i-1] {
		if (c < 'a' || c > 'z') && c != '-' {
			return id
		}
	}
	return id[i:]
}

// appendInvokeBody appends the InvokeModel body for the client's Messages
// body to dst: every top-level member but model, stream and anthropic_beta
// byte for byte, in order; then anthropic_version when the body has none,
// and anthropic_beta holding each flag of the client's anthropic-beta
// headers (every copy, comma lists split) and of the body's own
// anthropic_beta arrays that allowed holds, once, in the order first seen
// (no such flag: no anthropic_beta). withMaxTokens adds "max_tokens":1 when
// the body has no max_tokens (CountTokens checks the InvokeModel schema,
// which requires one; it does not change the count).
func appendInvokeBody(dst, body []byte, h *fasthttp.RequestHeader, allowed []string, withMaxTokens bool) ([]byte, error) {
	start := len(dst)
	dst = append(dst, '{')
	wrote, hasVersion, hasMax := false, false, false
	var own [][]byte // the body's anthropic_beta values
	_, err := objectMembers(body, func(raw []byte, ks, vs, end int) {
		switch memberKey(raw) {
		case "model", "stream":
			return
		case "anthropic_beta":
			own = append(own, body[vs:end])
			return
		case "anthropic_version":
			hasVersion = true
		case "max_tokens":
			hasMax = true
		}
		if wrote {
			dst = append(dst, ',')
		}
		dst = append(dst, body[ks:end]...)
		wrote = true
	})
	if err != nil {
		return dst[:start], badRequest("the request body is not a well-formed JSON object")
	}
	if !hasVersion {
		if wrote {
			dst = append(dst, ',')
		}
		dst = append(dst, bedrockVersionKV...)
	}
	// Written after at least anthropic_version: the comma is always due.
	f := betaFilter{allowed: allowed}
	mark := len(dst)
	dst = append(dst, `,"anthropic_beta":[`...)
	if h != nil {
		for _, v := range h.PeekAll(headerAnthropicBeta) {
			dst = f.appendList(dst, v)
		}
	}
	for _, v := range own {
		if dst, err = f.appendArray(dst, v); err != nil {
			return dst[:start], err
		}
	}
	if f.n == 0 {
		dst = dst[:mark]
	} else {
		dst = append(dst, ']')
	}
	if withMaxTokens && !hasMax {
		dst = append(dst, `,"max_tokens":1`...)
	}
	return append(dst, '}'), nil
}

// memberKey returns a raw (still escaped) JSON key unescaped: the raw bytes
// themselves when they hold no escape (no allocation), else the decoded key,
// so that "mod\u0065l" is "model" here as it is to Bedrock's parser.
func memberKey(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return byteconv.String(raw)
	}
	// Slow path: an escaped key.
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var k string
	if json.Unmarshal(q, &k) != nil {
		return string(raw)
	}
	return k
}

// appendCountTokensBody appends the CountTokens request for c:
// {"input":{"invokeModel":{"body":"<base64 of the InvokeModel body>"}}}.
func appendCountTokensBody(dst []byte, c *Call, allowed []string) ([]byte, error) {
	inner, err := appendInvokeBody(nil, c.Body, c.Header, allowed, true)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"input":{"invokeModel":{"body":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, inner)
	return append(dst, `"}}}`...), nil
}

// ClassifyError implements Adapter: classes as on chat (throttling as a
// rate limit, service and model failures as server errors, access denied
// as auth, "input is too long" or Anthropic's "prompt is too long" as a
// context overflow), in Anthropic's envelope with Bedrock's message.
func (bedrockMessages) ClassifyError(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	typ, msg := readBedrockError(status, h, body)
	return bedrockMessagesClass(status, typ, msg), AppendAnthropicError(nil, AnthropicErrorType(status), msg)
}

// bedrockMessagesClass is bedrockClass knowing Anthropic's own overflow
// message too, which Claude on Bedrock may pass on.
func bedrockMessagesClass(status int, typ, msg string) Class {
	cl := bedrockClass(status, typ, msg)
	if cl == ClassClient && containsFold(msg, "prompt is too long") {
		return ClassContextLength
	}
	return cl
}

// TranslateResponse implements Adapter: a Messages answer passes through;
// CountTokens' {"inputTokens":N} becomes {"input_tokens":N}.
func (bedrockMessages) TranslateResponse(dst, body []byte, c *Call) ([]byte, error) {
	if !c.CountTokens {
		return append(dst, body...), nil
	}
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil {
		return dst, errBadUpstreamBody
	}
	n := v.Get("inputTokens")
	if n == nil || n.Type() != fastjson.TypeNumber {
		return dst, errBadUpstreamBody
	}
	k, err := n.Int64()
	if err != nil || k < 0 {
		return dst, errBadUpstreamBody
	}
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, k, 10)
	return append(dst, '}'), nil
}

// NewStream implements Adapter.
func (bedrockMessages) NewStream(*Call) StreamDecoder { return newInvokeStream() }
