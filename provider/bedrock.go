package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/router"
)

// bedrockAdapter translates OpenAI chat completions to Bedrock's Converse
// API (POST {base_url}/model/{modelId}/converse, /converse-stream) and back.
// Safe for concurrent use.
type bedrockAdapter struct {
	// now is the signing clock; nil = time.Now. Tests fix it.
	now func() time.Time
}

func newBedrockAdapter() Adapter { return bedrockAdapter{} }

// sigv4 signs Bedrock requests; the SDK signer is safe for concurrent use
// and caches derived signing keys.
var sigv4 = v4.NewSigner()

// Surfaces reports chat, messages (natively for Claude models:
// bedrock_messages.go) and the client APIs served over chat.
func (bedrockAdapter) Surfaces() router.SurfaceSet { return bedrockSurfaces }

// BuildRequest translates the chat body into a Converse request and adds
// the credential: a Bedrock API key as a bearer token, else a SigV4
// signature (service bedrock) when AWS keys are set.
func (a bedrockAdapter) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if c.Surface != router.SurfaceChat {
		return errNotChat
	}
	if len(bytes.Trim(upstreamModel, ".")) == 0 {
		return errDotModel
	}
	body, err := bedrockRequestBody(req.SwapBody(nil)[:0], c)
	req.SwapBody(body)
	if err != nil {
		return err
	}
	op := "/converse"
	if c.Stream {
		op = "/converse-stream"
	}
	// Model ids hold ':' and, for inference profile ARNs, '/': escaped as
	// the AWS SDKs do, and kept escaped on the wire (fasthttp would
	// otherwise normalize the path).
	uri := make([]byte, 0, len(ep.BaseURL)+len(upstreamModel)*3+len("/model//converse-stream"))
	uri = append(uri, ep.BaseURL...)
	uri = append(uri, "/model/"...)
	uri = appendModelSegment(uri, upstreamModel)
	uri = append(uri, op...)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURIBytes(uri)
	req.URI().DisablePathNormalizing = true
	// An explicit Host header keeps the signed host even if a caller
	// rewrites the request URI to its path form.
	req.Header.SetHostBytes(req.URI().Host())
	req.Header.SetContentType("application/json")
	switch {
	case ep.APIKey != "":
		req.Header.Set("Authorization", "Bearer "+ep.APIKey)
	case ep.AWSAccessKeyID != "":
		return a.sign(req, ep, body)
	}
	return nil
}

// appendPathSegment percent-encodes s as one path segment: every byte but
// RFC 3986 unreserved characters (url.PathEscape would leave ':' as is,
// which the AWS SDKs encode).
func appendPathSegment(dst, s []byte) []byte {
	for _, c := range s {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '~' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', upperHex[c>>4], upperHex[c&0xf])
	}
	return dst
}

const upperHex = "0123456789ABCDEF"

// errDotModel refuses a model id made only of dots (or empty): no Bedrock
// id is, and "." and ".." are dot-segments (RFC 3986 §3.3) that a
// normalizing server or proxy resolves, so that /model/../converse would
// reach /converse; percent-encoding them does not help, since %2E is
// equivalent to "." (RFC 3986 §2.3).
var errDotModel = badRequest("a Bedrock model id cannot be empty or made only of dots")

// appendModelSegment appends a model id as one path segment (BuildRequest
// has refused ids made only of dots).
func appendModelSegment(dst, id []byte) []byte {
	return appendPathSegment(dst, id)
}

// sign adds the SigV4 headers. The SDK signer takes a net/http request:
// one is built with exactly what fasthttp will send (host, escaped path,
// content type and length) and the resulting headers are copied over.
func (a bedrockAdapter) sign(req *fasthttp.Request, ep *Endpoint, body []byte) error {
	u := req.URI()
	path, err := url.PathUnescape(byteconv.String(u.PathOriginal()))
	if err != nil {
		return err
	}
	hr := &http.Request{
		Method: http.MethodPost,
		URL: &url.URL{Scheme: string(u.Scheme()), Host: string(u.Host()),
			Path: path, RawPath: string(u.PathOriginal())},
		Host:          string(u.Host()),
		Header:        http.Header{"Content-Type": {"application/json"}},
		ContentLength: int64(len(body)),
	}
	sum := sha256.Sum256(body)
	now := time.Now
	if a.now != nil {
		now = a.now
	}
	creds := aws.Credentials{AccessKeyID: ep.AWSAccessKeyID,
		SecretAccessKey: ep.AWSSecretAccessKey, SessionToken: ep.AWSSessionToken}
	region := ep.Region
	if region == "" {
		region = regionFromHost(hr.Host)
	}
	if err := sigv4.SignHTTP(context.Background(), creds, hr, hex.EncodeToString(sum[:]),
		"bedrock", region, now()); err != nil {
		return err
	}
	for _, k := range [...]string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if v := hr.Header.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	return nil
}

// regionFromHost reads the region of a bedrock-runtime[-fips].{region}.amazonaws.com
// host, for an endpoint configured with a base URL but no region ("" if the
// host does not say).
func regionFromHost(host string) string {
	rest, ok := strings.CutPrefix(host, "bedrock-runtime.")
	if !ok {
		rest, ok = strings.CutPrefix(host, "bedrock-runtime-fips.")
	}
	region, _, found := strings.Cut(rest, ".")
	if !ok || !found {
		return ""
	}
	return region
}

// bedrockRequestBody appends the Converse request for c to dst (the model
// id is in the path, not the body).
func bedrockRequestBody(dst []byte, c *Call) ([]byte, error) {
	p := parserPool.Get()
	defer parserPool.Put(p)
	root, cp, err := parseChatRequest(p, c.Body)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"inferenceConfig":{`...)
	dst = cp.appendSampling(dst, `"maxTokens"`, `"topP"`, `"stopSequences"`)
	dst = append(dst, '}')
	msgs, _ := root.Get("messages").Array()
	if dst, err = appendSystem(dst, msgs, bedrockBlocks{}); err != nil {
		return dst, err
	}
	dst, toolHistory, err := appendMessages(dst, msgs, bedrockBlocks{})
	if err != nil {
		return dst, err
	}
	if dst, err = bedrockToolConfig(dst, root, toolHistory); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// bedrockToolConfig appends toolConfig. Converse has no "none" choice: the
// tools are then left out, unless the conversation already holds tool
// calls (Converse refuses toolUse blocks without a toolConfig), in which
// case they are sent without a toolChoice.
func bedrockToolConfig(dst []byte, root *fastjson.Value, toolHistory bool) ([]byte, error) {
	tc, err := parseToolChoice(root)
	if err != nil {
		return dst, err
	}
	if tc.mode == "none" && !toolHistory {
		return dst, forEachTool(root, func(chatTool) {})
	}
	n := 0
	err = forEachTool(root, func(t chatTool) {
		if n == 0 {
			dst = append(dst, `,"toolConfig":{"tools":[`...)
		} else {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"toolSpec":{`...)
		dst = t.appendFields(dst, `"inputSchema":{"json":`)
		dst = append(dst, "}}}"...)
	})
	if err != nil || n == 0 {
		return dst, err
	}
	dst = append(dst, ']')
	switch tc.mode {
	case "auto":
		dst = append(dst, `,"toolChoice":{"auto":{}}`...)
	case "required":
		dst = append(dst, `,"toolChoice":{"any":{}}`...)
	case "function":
		dst = append(dst, `,"toolChoice":{"tool":{"name":`...)
		dst = AppendJSONString(dst, tc.name)
		dst = append(dst, "}}"...)
	}
	return append(dst, '}'), nil
}

// bedrockImageFormats are the image formats Converse accepts.
var bedrockImageFormats = map[string]string{"image/png": "png", "image/jpeg": "jpeg",
	"image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp"}

// bedrockBlocks spells Converse content blocks.
type bedrockBlocks struct{}

func (bedrockBlocks) text(dst []byte, s string) []byte {
	dst = append(dst, `{"text":`...)
	dst = AppendJSONString(dst, s)
	return append(dst, '}')
}

// image takes inline images of the formats Converse knows, no URLs.
func (bedrockBlocks) image(dst []byte, img imageRef) ([]byte, error) {
	if img.url != "" {
		return dst, badRequest("bedrock takes images as data: URLs only, not http(s) URLs")
	}
	format, ok := bedrockImageFormats[img.mediaType]
	if !ok {
		return dst, badRequest("bedrock takes png, jpeg, gif and webp images only")
	}
	dst = append(dst, `{"image":{"format":"`...)
	dst = append(dst, format...)
	dst = append(dst, `","source":{"bytes":`...)
	dst = AppendJSONString(dst, img.data)
	return append(dst, "}}}"...), nil
}

func (bedrockBlocks) toolUse(dst []byte, id, name, args string) []byte {
	dst = append(dst, `{"toolUse":{"toolUseId":`...)
	dst = AppendJSONString(dst, id)
	dst = append(dst, `,"name":`...)
	dst = AppendJSONString(dst, name)
	dst = append(dst, `,"input":`...)
	dst = append(dst, args...) // checked to be a JSON object
	return append(dst, "}}"...)
}

func (bedrockBlocks) toolResult(dst []byte, id, text string) []byte {
	dst = append(dst, `{"toolResult":{"toolUseId":`...)
	dst = AppendJSONString(dst, id)
	dst = append(dst, `,"content":[{"text":`...)
	dst = AppendJSONString(dst, text)
	return append(dst, `}]}}`...)
}

// TranslateResponse turns a Converse response into a chat.completion.
func (bedrockAdapter) TranslateResponse(dst, body []byte, c *Call) ([]byte, error) {
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil || v.Type() != fastjson.TypeObject {
		return dst, errBadUpstreamBody
	}
	w := completionWriter{dst: dst}
	w.begin(newChatID(), c.Model)
	blocks := v.GetArray("output", "message", "content")
	for _, b := range blocks {
		if s, ok := jsonStr(b.Get("text")); ok {
			w.text = append(w.text, s...)
			w.hasText = true
		}
	}
	for _, b := range blocks {
		if tu := b.Get("toolUse"); tu != nil {
			id, _ := jsonStr(tu.Get("toolUseId"))
			name, _ := jsonStr(tu.Get("name"))
			w.toolCall(id, name, tu.Get("input"))
		}
	}
	stop, _ := jsonStr(v.Get("stopReason"))
	return w.end(finishReason(stop), parsedUsage(v.Get("usage"))), nil
}

// ClassifyError reads the error type from the x-amzn-ErrorType header (or
// the body's __type) and the message from the body.
func (bedrockAdapter) ClassifyError(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	typ, msg := readBedrockError(status, h, body)
	cl := bedrockClass(status, typ, msg)
	return cl, classEnvelope(cl, msg)
}

// readBedrockError returns the exception type and message of a Bedrock
// error answer (copies: the parser goes back to its pool); msg names the
// status (and type) when the body has none.
func readBedrockError(status int, h *fasthttp.ResponseHeader, body []byte) (typ, msg string) {
	p := parserPool.Get()
	defer parserPool.Put(p)
	if h != nil {
		typ = byteconv.String(h.Peek("X-Amzn-Errortype"))
	}
	if v, err := p.ParseBytes(body); err == nil {
		if typ == "" {
			typ, _ = jsonStr(v.Get("__type"))
		}
		if msg, _ = jsonStr(v.Get("message")); msg == "" {
			msg, _ = jsonStr(v.Get("Message"))
		}
	}
	// "ValidationException:http://internal.amazon.com/..." and
	// "com.amazon.coral#ValidationException" both name ValidationException.
	typ, _, _ = strings.Cut(typ, ":")
	if i := strings.LastIndexByte(typ, '#'); i >= 0 {
		typ = typ[i+1:]
	}
	if msg == "" {
		msg = "bedrock answered HTTP " + strconv.Itoa(status)
		if typ != "" {
			msg += " " + typ
		}
	}
	return strings.Clone(typ), strings.Clone(msg)
}

// bedrockClass classifies a Bedrock error by its exception type (either
// case of the first letter: HTTP errors say ThrottlingException, stream
// exceptions throttlingException), falling back to the status.
func bedrockClass(status int, typ, msg string) Class {
	if containsFold(msg, "input is too long") || containsFold(msg, "too many input tokens") {
		if status == 400 || status == 413 || strings.EqualFold(typ, "ValidationException") {
			return ClassContextLength
		}
	}
	switch strings.ToLower(typ) {
	case "throttlingexception", "toomanyrequestsexception":
		return ClassRateLimited
	case "accessdeniedexception", "unrecognizedclientexception", "expiredtokenexception",
		"invalidsignatureexception", "incompletesignatureexception", "missingauthenticationtokenexception":
		return ClassAuth
	case "serviceunavailableexception", "internalserverexception", "modelnotreadyexception",
		"modeltimeoutexception", "modelstreamerrorexception", "modelerrorexception":
		return ClassServer
	}
	switch {
	case status == 429:
		return ClassRateLimited
	case status == 408 || status >= 500:
		return ClassServer
	case status == 401 || status == 403:
		return ClassAuth
	}
	return ClassClient
}
