//go:build !race

package hotpath

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/upstream"
)

// TestScreenedRequestAllocatesNothing covers a whole proxied request
// through Gateway.Handler on a loopback connection with every screen check
// at work: the header section scan (Transfer-Encoding, Content-Length,
// Origin), an allowed Host and Origin from long lists, the metadata header
// read from the header section, the trailer check and raw-path routing.
func TestScreenedRequestAllocatesNothing(t *testing.T) {
	ln := answeringUpstream(t, []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`))
	var hosts, origins []string
	for i := range 20 {
		hosts = append(hosts, "h"+strings.Repeat("x", i)+".internal")
		origins = append(origins, "https://o"+strings.Repeat("x", i)+".example")
	}
	st, err := Build(mustParse(t, `
server:
  allowed_hosts: [`+strings.Join(hosts, ", ")+`, gw.internal]
  allowed_origins: [`+strings.Join(origins, ", ")+`, "https://app.example.com"]
strategy:
  mode: conditional
  conditions:
    - {key: metadata, field: tier, value: gold, target_key: a}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://`+ln.Addr().String()+`/v1", api_key: k}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	g := New(st)
	var req fasthttp.Request
	if err := parseRequest(t, &req, "/v1/chat/completions",
		"Host: GW.internal:8080\r\nOrigin: https://app.example.com\r\nUser-Agent: sdk/1.0\r\n"+
			"Authorization: Bearer sk-client\r\nX-Gateway-Metadata: {\"tier\":\"gold\"}\r\nAccept: application/json\r\n",
		[]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)); err != nil {
		t.Fatal(err)
	}
	var rc fasthttp.RequestCtx
	rc.Init2(loopbackConnStub{}, nil, false)
	req.CopyTo(&rc.Request)
	if !loopbackConn(&rc) {
		t.Fatal("the stub connection is not loopback")
	}
	run := func() {
		rc.Response.Reset()
		g.Handler(&rc)
		if rc.Response.StatusCode() != 200 || string(rc.Response.Header.Peek("X-Gateway-Rule")) != "0" {
			t.Fatalf("status %d rule %q: %s", rc.Response.StatusCode(), rc.Response.Header.Peek("X-Gateway-Rule"), rc.Response.Body())
		}
	}
	for range 50 {
		run()
	}
	if n := testing.AllocsPerRun(500, run); n != 0 {
		t.Fatalf("a screened request allocates %v times, want 0", n)
	}
}
