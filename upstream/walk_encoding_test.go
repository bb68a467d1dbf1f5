package upstream

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// gzipUnlessIdentity answers like a CDN that compresses whenever the
// request allows it: a request without Accept-Encoding allows any coding.
func gzipUnlessIdentity(body string) func(*fasthttp.RequestCtx, int) {
	return func(ctx *fasthttp.RequestCtx, _ int) {
		ctx.SetContentType("application/json")
		if ae := string(ctx.Request.Header.Peek("Accept-Encoding")); ae == "identity" {
			ctx.SetBodyString(body)
			return
		}
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(body)) //nolint:errcheck
		zw.Close()             //nolint:errcheck
		ctx.Response.Header.Set("Content-Encoding", "gzip")
		ctx.SetBody(b.Bytes())
	}
}

// The walk relays bodies as plain bytes, so it must ask the upstream for
// no content coding; otherwise a compressing upstream's gzip bytes reach
// the client as if they were JSON.
func TestWalkAsksForIdentityEncoding(t *testing.T) {
	h := newHarness(t)
	const answer = `{"id":"a","object":"chat.completion"}`
	h.mock("a", gzipUnlessIdentity(answer))
	rc, res := h.walk(chatCall(false), []*Target{h.target("a", nil)}, 5*time.Second, nil)
	if res.Status != 200 || string(rc.Response.Body()) != answer {
		t.Fatalf("status %d body %q", res.Status, rc.Response.Body())
	}
	if ce := rc.Response.Header.Peek("Content-Encoding"); len(ce) != 0 || strings.Contains(string(rc.Response.Body()), "\x1f\x8b") {
		t.Fatalf("compressed answer relayed: Content-Encoding %q", ce)
	}
}
