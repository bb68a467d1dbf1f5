package provider

import (
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

// geminiAdapter speaks the Gemini API's OpenAI-compatible endpoint: chat
// and embeddings, bodies passed through, the key as a bearer token.
type geminiAdapter struct{ OpenAIAdapter }

var geminiPaths = []string{"/chat/completions", "/embeddings"}

func (geminiAdapter) uriPaths() []string { return geminiPaths }

// Surfaces implements Adapter: chat and embeddings.
func (geminiAdapter) Surfaces() router.SurfaceSet { return geminiSurfaces }

// BuildRequest implements Adapter.
func (a geminiAdapter) BuildRequest(req *fasthttp.Request, ep *Endpoint, c *Call, upstreamModel []byte) error {
	if a.Surfaces()&(1<<c.Surface) == 0 {
		return errors.New("gemini does not serve " + c.Surface.String())
	}
	return a.OpenAIAdapter.BuildRequest(req, ep, c, upstreamModel)
}

// ClassifyError implements Adapter.
func (geminiAdapter) ClassifyError(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	return classifyOpenAICompatible(status, h, body)
}
