package hotpath

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkScreen is the screen's cost on the head an OpenAI SDK sends
// (eleven fields, an Origin from a short list) over a loopback connection,
// and the second header-section pass that reads X-Gateway-Metadata.
func BenchmarkScreen(b *testing.B) {
	st := &State{allowedHosts: []string{"gw.internal"}, allowedOrigins: []string{"https://a.example", "https://app.example.com"}}
	var rc fasthttp.RequestCtx
	rc.Init2(loopbackConnStub{}, nil, false)
	if err := parseRequest(b, &rc.Request, "/v1/chat/completions",
		"Host: 127.0.0.1:8080\r\nAccept: application/json\r\nAuthorization: Bearer sk-proj-0123456789abcdef0123456789abcdef\r\n"+
			"User-Agent: OpenAI/Python 1.54.0\r\nX-Stainless-Lang: python\r\nX-Stainless-Package-Version: 1.54.0\r\n"+
			"X-Stainless-Runtime: CPython\r\nX-Request-Id: 7f1c9a\r\nOrigin: https://app.example.com\r\n"+
			"X-Gateway-Metadata: {\"tier\":\"gold\"}\r\n", []byte(`{"model":"gpt-4o"}`)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if screen(&rc, st) != refusedNone {
			b.Fatal("refused")
		}
		if _, n := headerField(rc.Request.Header.RawHeaders(), headerMetadataLower); n != 1 {
			b.Fatal("no metadata")
		}
	}
}
