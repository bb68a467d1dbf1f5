package upstream

import (
	"bytes"
	"errors"

	"github.com/valyala/fasthttp"
)

// errUnknownEncoding refuses an answer whose content coding the gateway
// cannot decode.
var errUnknownEncoding = errors.New("upstream: answer has an unsupported Content-Encoding")

// decodedBody returns the body of a buffered answer as plain bytes. Every
// attempt asks for Accept-Encoding: identity, but a proxy or CDN in front of
// a provider may compress anyway; relaying those bytes without their
// Content-Encoding would hand the client garbage labelled JSON. A gzip,
// deflate, br or zstd body is decoded (at most maxResponseBodySize bytes
// out: a small bomb cannot inflate without bound); any other or stacked
// coding is an error, a failover-safe protocol failure for the caller.
// Fast path (no Content-Encoding, or identity): resp.Body(), no copy.
func decodedBody(resp *fasthttp.Response) ([]byte, error) {
	ce := resp.Header.ContentEncoding()
	if len(ce) == 0 || bytes.EqualFold(ce, identityCoding) {
		return resp.Body(), nil
	}
	switch string(bytes.ToLower(bytes.TrimSpace(ce))) {
	case "gzip", "x-gzip":
		return resp.BodyGunzipWithLimit(maxResponseBodySize)
	case "deflate":
		return resp.BodyInflateWithLimit(maxResponseBodySize)
	case "br":
		return resp.BodyUnbrotliWithLimit(maxResponseBodySize)
	case "zstd":
		return resp.BodyUnzstdWithLimit(maxResponseBodySize)
	}
	return nil, errUnknownEncoding
}

// encodedStream reports whether a streamed answer carries a content coding
// other than identity. The SSE relay reads events as plain text, so such a
// stream is refused before its commit (a failover-safe protocol failure)
// rather than decoded.
func encodedStream(resp *fasthttp.Response) bool {
	ce := resp.Header.ContentEncoding()
	return len(ce) > 0 && !bytes.EqualFold(ce, identityCoding)
}
