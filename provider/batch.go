package provider

import (
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/router"
)

// Stored batches (docs/batches.md): which providers keep a tenant's batch
// files and jobs, and how a call of those APIs is authenticated. The calls
// themselves are built by package batch; only what differs by provider
// lives here.

// batchSurfaces are, by provider, the surfaces whose requests a stored
// batch of that provider may hold: OpenAI's Files and Batches APIs (an
// azure target on the v1 API too: see config.Target.BatchSurfaces) take
// chat, completions, embeddings and responses lines; Anthropic's Message
// Batches take Messages requests. Other providers keep none.
var batchSurfaces = map[string]router.SurfaceSet{
	OpenAI: 1<<router.SurfaceChat | 1<<router.SurfaceCompletions | 1<<router.SurfaceEmbeddings |
		1<<router.SurfaceResponses,
	Azure: 1<<router.SurfaceChat | 1<<router.SurfaceCompletions | 1<<router.SurfaceEmbeddings |
		1<<router.SurfaceResponses,
	Anthropic: 1 << router.SurfaceMessages,
}

// BatchSurfaces returns the surfaces whose requests provider name's
// stored batches hold; 0 when it keeps none.
func BatchSurfaces(name string) router.SurfaceSet { return batchSurfaces[name] }

// SetBatchCredential sets the credential of a batch API call to a target
// of provider name on req: a bearer token for openai, api-key (or an Entra
// ID token) for azure, x-api-key and anthropic-version for anthropic, with
// the client's anthropic-version and anthropic-beta when client carries
// them (nil: none). It returns ErrNoToken when a token could not be had.
func SetBatchCredential(req *fasthttp.Request, name string, ep *Endpoint, client *fasthttp.RequestHeader) error {
	switch name {
	case OpenAI:
		if ep.APIKey != "" {
			var buf [256]byte
			req.Header.SetBytesV(fasthttp.HeaderAuthorization, append(append(buf[:0], "Bearer "...), ep.APIKey...))
		}
	case Azure:
		if ep.Token != nil {
			return setBearer(req, ep)
		}
		if ep.APIKey != "" {
			req.Header.SetCanonical(headerAPIKey, byteconv.Bytes(ep.APIKey))
		}
	case Anthropic:
		if ep.APIKey != "" {
			req.Header.Set("x-api-key", ep.APIKey)
		}
		var version []byte
		if client != nil {
			version = client.Peek(headerAnthropicVersion)
		}
		if len(version) > 0 {
			req.Header.SetBytesV(headerAnthropicVersion, version)
		} else {
			req.Header.Set(headerAnthropicVersion, AnthropicVersion)
		}
		if client != nil {
			for _, v := range client.PeekAll(headerAnthropicBeta) {
				req.Header.AddBytesV(headerAnthropicBeta, v)
			}
		}
	}
	return nil
}

// ClassifyBatchError classifies a non-2xx answer of a batch API call to a
// target of provider name, as the walk classifies a request's (retryable,
// failover-safe, the client's own), and returns the envelope the client
// gets if it is final: the provider's own when it is shaped like one.
func ClassifyBatchError(name string, status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	switch name {
	case Anthropic:
		return messagesAdapter{}.ClassifyError(status, h, body)
	case Azure:
		return azureAdapter{}.ClassifyError(status, h, body)
	}
	return OpenAIAdapter{}.ClassifyError(status, h, body)
}
