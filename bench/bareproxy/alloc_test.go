//go:build !race

package bareproxy

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// TestNoAllocsPerRequest backs the claim that the baseline forwards a
// non-streaming request without allocating, so it is not handicapped
// against Switchyard.
func TestNoAllocsPerRequest(t *testing.T) {
	ln := fasthttputil.NewInmemoryListener()
	body := []byte(`{"object":"chat.completion","choices":[]}`)
	up := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBody(body) }}
	go func() { _ = up.Serve(ln) }()
	defer up.Shutdown()

	p := New("upstream.invalid:80")
	p.client.Dial = func(string) (net.Conn, error) { return ln.Dial() }
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("http://proxy/v1/chat/completions")
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetBodyString(`{"model":"m","messages":[]}`)
	allocs := testing.AllocsPerRun(200, func() {
		p.Handler(&ctx)
		if ctx.Response.StatusCode() != 200 || string(ctx.Response.Body()) != string(body) {
			t.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per forwarded request, want 0", allocs)
	}
}
