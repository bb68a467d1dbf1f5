package provider

import (
	"bufio"
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

// countEstimate answers POST /v1/messages/count_tokens for a member whose
// provider cannot count tokens (docs/providers.md, Translation): the
// gateway's estimate, {"input_tokens": ceil(body bytes / 4)}, with
// X-Gateway-Estimate: true, and no upstream call. The walk reaches it in
// chain order like any member. Stateless.
type countEstimate struct{}

// LocalAnswerer is an Adapter that answers a call itself, without an
// upstream call. The walk gives it the member once the residency guard
// admits the member; nothing of the member's health, limits or queue
// applies, since nothing is sent.
type LocalAnswerer interface {
	// AnswerLocally writes the whole answer to c into resp: status,
	// content type, its own headers and body.
	AnswerLocally(resp *fasthttp.Response, c *Call)
}

// HeaderEstimate marks an answer that is the gateway's estimate.
const HeaderEstimate = "X-Gateway-Estimate"

var (
	headerEstimate = []byte(HeaderEstimate)
	trueValue      = []byte("true")
)

// AnswerLocally implements LocalAnswerer.
func (countEstimate) AnswerLocally(resp *fasthttp.Response, c *Call) {
	var buf [40]byte
	b := append(buf[:0], `{"input_tokens":`...)
	b = strconv.AppendInt(b, EstimateTokens(c.Body), 10)
	b = append(b, '}')
	resp.SetStatusCode(fasthttp.StatusOK)
	resp.Header.SetContentType("application/json")
	resp.Header.SetCanonical(headerEstimate, trueValue)
	resp.SetBody(b)
}

// EstimateTokens is the gateway's token estimate of a body: ceil(len/4).
func EstimateTokens(body []byte) int64 { return (int64(len(body)) + 3) / 4 }

var errEstimate = errors.New("BUG: the count_tokens estimate makes no upstream call")

// Surfaces implements Adapter.
func (countEstimate) Surfaces() router.SurfaceSet { return 1 << router.SurfaceMessages }

// BuildRequest implements Adapter: never called (the walk answers locally).
func (countEstimate) BuildRequest(*fasthttp.Request, *Endpoint, *Call, []byte) error {
	return errEstimate
}

// ClassifyError implements Adapter: never called.
func (countEstimate) ClassifyError(status int, _ *fasthttp.ResponseHeader, _ []byte) (Class, []byte) {
	return classifyStatus(status), AppendAnthropicError(nil, AnthropicErrorType(status), errEstimate.Error())
}

// TranslateResponse implements Adapter: never called.
func (countEstimate) TranslateResponse(dst, _ []byte, _ *Call) ([]byte, error) {
	return dst, errEstimate
}

// NewStream implements Adapter: never called (count_tokens never streams).
func (countEstimate) NewStream(*Call) StreamDecoder { return errDecoder{} }

// errDecoder is a StreamDecoder that fails at once.
type errDecoder struct{}

func (errDecoder) Next(dst []byte, _ *bufio.Reader) ([]byte, error) { return dst, errEstimate }
