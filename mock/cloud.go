package mock

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// Cloud is a mock of the three cloud providers' wire formats on one
// listener, for tests and the demo:
//
//   - Azure OpenAI: POST /openai/deployments/{deployment}/{chat/completions|
//     completions|embeddings|images/generations}?api-version=… and the v1 API
//     under /openai/v1/…, authenticated by api-key or a bearer token it issued;
//   - Vertex AI: POST /v1/projects/{p}/locations/{r}/publishers/anthropic/
//     models/{model}:rawPredict|:streamRawPredict (Anthropic's Messages body,
//     no model, anthropic_version vertex-2023-10-16, answered in Anthropic's
//     shapes) and …/endpoints/openapi/chat/completions, with a bearer token
//     it issued;
//   - Gemini: POST /v1beta/openai/{chat/completions|embeddings} with the
//     bearer API key;
//   - token endpoints: POST /token (Google's JWT-bearer grant) and
//     POST /{tenant}/oauth2/v2.0/token (Entra ID client credentials).
//
// OpenAI-shaped answers come from an inner Server (its Fail, and its
// /_mock/ admin endpoints, inject failures there); FailClaude injects them
// on rawPredict. A request with a
// wrong credential is 401. It never echoes a credential unless told to
// (CloudOptions.EchoAuth, for redaction tests).
type Cloud struct {
	opts  CloudOptions
	inner *Server
	srv   *fasthttp.Server
	addr  string

	mu     sync.Mutex
	tokens map[string]time.Time // issued token -> expiry

	issued      atomic.Int64
	tokenFails  atomic.Bool
	claudeFail  atomic.Int64 // status to answer rawPredict with; 0 = none
	claudeCalls atomic.Int64
}

// CloudOptions configures a Cloud mock.
type CloudOptions struct {
	// Name is the inner mock's name. Default "cloud".
	Name string
	// AzureKey and GeminiKey are the API keys accepted (api-key header,
	// bearer). "" = that key is not accepted (tokens only for Azure).
	AzureKey, GeminiKey string
	// ClientSecret is the Entra ID client secret accepted. Default "".
	ClientSecret string
	// TokenLife is the lifetime of issued tokens. Default 1h.
	TokenLife time.Duration
	// EchoAuth makes every answer quote the credential it received.
	EchoAuth bool
}

// StartCloud listens on addr and serves the cloud mock in a goroutine.
func StartCloud(addr string, o CloudOptions) (*Cloud, error) {
	if o.Name == "" {
		o.Name = "cloud"
	}
	if o.TokenLife <= 0 {
		o.TokenLife = time.Hour
	}
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return nil, err
	}
	c := &Cloud{opts: o, inner: New(Options{Name: o.Name}), tokens: map[string]time.Time{}, addr: ln.Addr().String()}
	c.srv = &fasthttp.Server{Handler: c.handle, Name: "switchyard-mock-cloud", Logger: quietLogger{},
		MaxRequestBodySize: 256 << 20} // batch uploads (batches.go)
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

// URL is the mock's root, "http://ADDR".
func (c *Cloud) URL() string { return "http://" + c.addr }

// Inner is the OpenAI-shaped mock behind the Azure, Gemini and Vertex
// OpenAI-compatible paths (use its Fail and Stats).
func (c *Cloud) Inner() *Server { return c.inner }

// Close stops the mock.
func (c *Cloud) Close() error { return c.srv.Shutdown() }

// TokensIssued counts the tokens issued.
func (c *Cloud) TokensIssued() int64 { return c.issued.Load() }

// FailTokens makes the token endpoints answer 401 (true) or issue (false).
func (c *Cloud) FailTokens(fail bool) { c.tokenFails.Store(fail) }

// FailClaude makes rawPredict answer status (0: answer normally).
func (c *Cloud) FailClaude(status int) { c.claudeFail.Store(int64(status)) }

// ClaudeCalls counts rawPredict and streamRawPredict requests.
func (c *Cloud) ClaudeCalls() int64 { return c.claudeCalls.Load() }

func (c *Cloud) handle(ctx *fasthttp.RequestCtx) {
	path := string(ctx.Path())
	switch {
	case strings.HasPrefix(path, "/_mock/"): // the inner mock's admin endpoints
		c.inner.Handler(ctx)
	case path == "/token" || strings.HasSuffix(path, "/oauth2/v2.0/token"):
		c.token(ctx, path != "/token")
	case strings.HasPrefix(path, "/openai/deployments/"):
		rest := strings.TrimPrefix(path, "/openai/deployments/")
		i := strings.IndexByte(rest, '/')
		if i <= 0 || len(ctx.QueryArgs().Peek("api-version")) == 0 {
			writeError(ctx, 404, "invalid_request_error", "404", "mock azure: want /openai/deployments/{deployment}/…?api-version=")
			return
		}
		c.openAI(ctx, c.azureAuth(ctx), "/v1"+rest[i:])
	case strings.HasPrefix(path, "/openai/v1/"):
		c.openAI(ctx, c.azureAuth(ctx), "/v1"+strings.TrimPrefix(path, "/openai/v1"))
	case strings.HasPrefix(path, "/v1beta/openai/"):
		c.openAI(ctx, c.bearer(ctx, c.opts.GeminiKey), "/v1"+strings.TrimPrefix(path, "/v1beta/openai"))
	case strings.HasPrefix(path, "/v1/projects/") && strings.HasSuffix(path, "/endpoints/openapi/chat/completions"):
		c.openAI(ctx, c.bearer(ctx, ""), "/v1/chat/completions")
	case strings.HasPrefix(path, "/v1/projects/") && strings.Contains(path, "/publishers/anthropic/models/"):
		c.claude(ctx, path)
	default:
		writeError(ctx, 404, "invalid_request_error", "not_found", "mock cloud: unknown path")
	}
}

// azureAuth accepts the api-key or an issued bearer token.
func (c *Cloud) azureAuth(ctx *fasthttp.RequestCtx) bool {
	if k := ctx.Request.Header.Peek("api-key"); len(k) > 0 {
		return c.opts.AzureKey != "" && string(k) == c.opts.AzureKey
	}
	return c.bearer(ctx, "")
}

// bearer accepts Authorization: Bearer key (key != "") or an issued token
// that has not expired.
func (c *Cloud) bearer(ctx *fasthttp.RequestCtx, key string) bool {
	v, ok := strings.CutPrefix(string(ctx.Request.Header.Peek("Authorization")), "Bearer ")
	if !ok || v == "" {
		return false
	}
	if key != "" && v == key {
		return true
	}
	c.mu.Lock()
	exp, issued := c.tokens[v]
	c.mu.Unlock()
	return issued && time.Now().Before(exp)
}

func (c *Cloud) openAI(ctx *fasthttp.RequestCtx, authorized bool, innerPath string) {
	if !authorized {
		c.unauthorized(ctx)
		return
	}
	ctx.Request.SetRequestURI(innerPath)
	c.inner.Handler(ctx)
	c.echo(ctx)
}

func (c *Cloud) unauthorized(ctx *fasthttp.RequestCtx) {
	writeError(ctx, 401, "invalid_request_error", "invalid_api_key", "mock cloud: missing or wrong credential")
	c.echo(ctx)
}

// echo appends the credential received to the answer when EchoAuth is on
// (a careless upstream; the gateway must redact it).
func (c *Cloud) echo(ctx *fasthttp.RequestCtx) {
	if !c.opts.EchoAuth {
		return
	}
	got := string(ctx.Request.Header.Peek("Authorization")) + string(ctx.Request.Header.Peek("api-key"))
	ctx.Response.Header.Set("X-Mock-Echo", got)
	if b := ctx.Response.Body(); len(b) > 1 && b[len(b)-1] == '}' && !ctx.Response.IsBodyStream() {
		q, _ := json.Marshal(got)
		ctx.Response.SetBody(append(append(append(append([]byte(nil), b[:len(b)-1]...), `,"echo":`...), q...), '}'))
	}
}

// token issues a token for a well-formed grant.
func (c *Cloud) token(ctx *fasthttp.RequestCtx, entra bool) {
	args := ctx.PostArgs()
	ok := false
	if entra {
		ok = string(args.Peek("grant_type")) == "client_credentials" && len(args.Peek("client_id")) > 0 &&
			string(args.Peek("client_secret")) == c.opts.ClientSecret && c.opts.ClientSecret != "" &&
			string(args.Peek("scope")) == "https://cognitiveservices.azure.com/.default"
	} else {
		ok = string(args.Peek("grant_type")) == "urn:ietf:params:oauth:grant-type:jwt-bearer" &&
			strings.Count(string(args.Peek("assertion")), ".") == 2
	}
	if !ok || c.tokenFails.Load() {
		ctx.SetStatusCode(401)
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"error":"invalid_client","error_description":"mock: bad grant"}`)
		return
	}
	var r [12]byte
	_, _ = rand.Read(r[:])
	tok := "mocktok-" + strconv.FormatInt(c.issued.Add(1), 10) + "-" + hex.EncodeToString(r[:])
	c.mu.Lock()
	c.tokens[tok] = time.Now().Add(c.opts.TokenLife)
	c.mu.Unlock()
	ctx.SetContentType("application/json")
	ctx.SetBodyString(`{"access_token":"` + tok + `","token_type":"Bearer","expires_in":` +
		strconv.Itoa(int(c.opts.TokenLife/time.Second)) + `}`)
}

var errVertexBody = errors.New("want a JSON object with anthropic_version vertex-2023-10-16 and no model")

// claude answers rawPredict / streamRawPredict in Anthropic's shapes.
func (c *Cloud) claude(ctx *fasthttp.RequestCtx, path string) {
	c.claudeCalls.Add(1)
	if !c.bearer(ctx, "") {
		c.unauthorized(ctx)
		return
	}
	i := strings.LastIndexByte(path, ':')
	model, method := path[strings.LastIndexByte(path, '/')+1:i], path[i+1:]
	var p fastjson.Parser
	v, err := p.ParseBytes(ctx.PostBody())
	if err == nil && (v.Exists("model") && model != "count-tokens" || string(v.GetStringBytes("anthropic_version")) != "vertex-2023-10-16") {
		err = errVertexBody
	}
	if err != nil || method != "rawPredict" && method != "streamRawPredict" {
		ctx.SetStatusCode(400)
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"type":"error","error":{"type":"invalid_request_error","message":"mock vertex: ` + errVertexBody.Error() + `"}}`)
		return
	}
	if status := int(c.claudeFail.Load()); status != 0 {
		ctx.SetStatusCode(status)
		ctx.SetContentType("application/json")
		if status == 429 {
			ctx.SetBodyString(`{"error":{"code":429,"message":"Resource exhausted. Please try again later.","status":"RESOURCE_EXHAUSTED"}}`)
		} else {
			ctx.SetBodyString(`{"type":"error","error":{"type":"api_error","message":"mock vertex: injected ` + strconv.Itoa(status) + `"}}`)
		}
		c.echo(ctx)
		return
	}
	if model == "count-tokens" {
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"input_tokens":12}`)
		return
	}
	text := "hello from vertex " + model
	if c.opts.EchoAuth {
		text += " " + string(ctx.Request.Header.Peek("Authorization"))
	}
	q, _ := json.Marshal(text)
	if method == "rawPredict" {
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"id":"msg_mock","type":"message","role":"assistant","model":"` + model + `","content":[{"type":"text","text":` +
			string(q) + `}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":5}}`)
		return
	}
	ctx.SetContentType("text/event-stream")
	ctx.SetBodyString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_mock\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"" + model +
		"\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":" + string(q) + "}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
}

// ServiceAccountKey returns a fresh service-account key (JSON) whose
// token_uri is tokenURI, for a vertex target in front of this mock.
func ServiceAccountKey(tokenURI string) ([]byte, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"type": "service_account", "project_id": "demo-project",
		"private_key_id": "mock", "private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "switchyard@demo-project.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokenURI})
}
