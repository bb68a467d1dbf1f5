package provider

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/internal/byteconv"
)

// Helpers of the azure, vertex and gemini adapters (docs/providers.md).
// Their bodies are OpenAI's or Anthropic's: they reuse those adapters and
// change the URL, the credential header and a few classification rules.

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
	ep.setAPIKeyBearer(req)
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

// classifyOpenAICompatible is OpenAIAdapter.ClassifyError, with a 400
// whose message says the input is too long counted as an overflow.
func classifyOpenAICompatible(status int, h *fasthttp.ResponseHeader, body []byte) (Class, []byte) {
	cl, env := OpenAIAdapter{}.ClassifyError(status, h, body)
	if cl == ClassClient && status == fasthttp.StatusBadRequest {
		for _, m := range overflowMessages {
			if containsFold(byteconv.String(body), m) {
				return ClassContextLength, env
			}
		}
	}
	return cl, env
}
