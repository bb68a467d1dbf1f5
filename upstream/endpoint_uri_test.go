package upstream

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/router"
)

// TestPreparedURIsWriteTheSameRequest checks that an attempt built from an
// endpoint's parsed URIs goes out byte for byte as one whose URI is parsed
// from the joined base URL and path: request line, Host, every header.
func TestPreparedURIsWriteTheSameRequest(t *testing.T) {
	bases := []string{
		"http://127.0.0.1:8000/v1",
		"https://api.example.com/v1",
		"https://api.example.com",
		"http://gw.internal:9000/openai/deploy%2Fments/v1",
		"http://[::1]:8080/v1",
		"http://h/a/../b/./c//d",
	}
	cases := []struct {
		provider string
		surface  router.Surface
		count    bool
	}{
		{config.ProviderOpenAI, router.SurfaceChat, false},
		{config.ProviderOpenAI, router.SurfaceCompletions, false},
		{config.ProviderOpenAI, router.SurfaceEmbeddings, false},
		{config.ProviderOpenAI, router.SurfaceImages, false},
		{config.ProviderOpenAI, router.SurfaceResponses, false},
		{config.ProviderAnthropic, router.SurfaceChat, false},
		{config.ProviderAnthropic, router.SurfaceMessages, false},
		{config.ProviderAnthropic, router.SurfaceMessages, true},
	}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	for _, base := range bases {
		for _, c := range cases {
			tg, err := NewPool().Target(&config.Target{VirtualKey: "t", Provider: c.provider, BaseURL: base, APIKey: "sk-test"})
			if err != nil {
				t.Fatal(err)
			}
			if !tg.Endpoint.Prepared() {
				t.Fatalf("%s %s: no prepared URIs", c.provider, base)
			}
			hand := tg.Endpoint.Unprepared()
			call := &Call{Surface: c.surface, Body: body, Model: []byte("m"), CountTokens: c.count}
			ad, _ := provider.Pick(tg.Adapter, &tg.Endpoint, c.surface, c.count, call.Model)
			got := writeAttempt(t, tg.client(), ad, &tg.Endpoint, call)
			want := writeAttempt(t, tg.client(), ad, &hand, call)
			if !bytes.Equal(got, want) {
				t.Errorf("%s %v %s:\nprepared: %q\nparsed:   %q", c.provider, c.surface, base, got, want)
			}
		}
	}
}

// writeAttempt builds one attempt's request as the walk does and returns
// what fasthttp would write for it.
func writeAttempt(t *testing.T, hc *fasthttp.HostClient, ad Adapter, ep *Endpoint, call *Call) []byte {
	t.Helper()
	var req fasthttp.Request
	if err := ad.BuildRequest(&req, ep, call, call.Model); err != nil {
		t.Fatal(err)
	}
	// What HostClient.doNonNilReqResp does before the transport writes.
	req.URI().DisablePathNormalizing = hc.DisablePathNormalizing
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	if err := req.Write(w); err != nil {
		t.Fatal(err)
	}
	_ = w.Flush()
	return out.Bytes()
}

// BenchmarkBuildRequestOpenAI is one pass-through attempt's request: with
// the endpoint's parsed URI, and as before (parsed from bytes) for comparison.
func BenchmarkBuildRequestOpenAI(b *testing.B) {
	tg, err := NewPool().Target(&config.Target{VirtualKey: "t", Provider: config.ProviderOpenAI, BaseURL: "https://api.example.com/v1", APIKey: "sk-test"})
	if err != nil {
		b.Fatal(err)
	}
	hand := tg.Endpoint.Unprepared()
	call := &Call{Surface: router.SurfaceChat, Body: []byte(`{"model":"m"}`), Model: []byte("m")}
	for _, bc := range []struct {
		name string
		ep   *Endpoint
	}{{"prepared", &tg.Endpoint}, {"parsed", &hand}} {
		b.Run(bc.name, func(b *testing.B) {
			var req fasthttp.Request
			b.ReportAllocs()
			for b.Loop() {
				req.Reset()
				if err := tg.Adapter.BuildRequest(&req, bc.ep, call, call.Model); err != nil {
					b.Fatal(err)
				}
				_ = req.URI() // what the client does before writing
			}
		})
	}
}
