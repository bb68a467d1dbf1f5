package provider

import (
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/router"
)

// azureAdapter speaks Azure OpenAI: the v1 API (OpenAI's paths under
// base_url) or, with an API version, classic deployment URLs. The key goes
// in api-key; an Entra ID token as a bearer token. Bodies pass through.
type azureAdapter struct{ OpenAIAdapter }

// uriPaths lists the v1 API's paths (classic URLs are per deployment).
func (a azureAdapter) uriPaths() []string { return a.OpenAIAdapter.uriPaths() }

// Surfaces implements Adapter.
func (azureAdapter) Surfaces() router.SurfaceSet { return azureSurfaces }

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
