//go:build !race

package provider

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

// Building an OpenAI request with a real-length base URL and key (both well
// over Go's 32-byte stack buffer for string concatenation) allocates
// nothing once the request's own buffers are warm.
func TestOpenAIBuildRequestAllocsZero(t *testing.T) {
	ep := &Endpoint{
		BaseURL: "https://my-resource.openai.azure-proxy.example.com/openai/v1",
		APIKey:  "sk-proj-" + strings.Repeat("A1b2C3d4", 20),
	}
	call := &Call{Surface: router.SurfaceChat, Body: []byte(chatBody), Model: []byte("gpt-x")}
	var req fasthttp.Request
	run := func() {
		req.Reset()
		if err := (OpenAIAdapter{}).BuildRequest(&req, ep, call, call.Model); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if got := string(req.RequestURI()); got != ep.BaseURL+"/chat/completions" {
		t.Fatalf("URI %q", got)
	}
	if got := string(req.Header.Peek("Authorization")); got != "Bearer "+ep.APIKey {
		t.Fatalf("Authorization %q", got)
	}
	if allocs := testing.AllocsPerRun(1000, run); allocs != 0 {
		t.Fatalf("BuildRequest allocates %v per run", allocs)
	}

	// With model_map: the body is rewritten into the request's pooled
	// body buffer.
	mapped := []byte("gpt-x-2024-08-06")
	run = func() {
		req.Reset()
		if err := (OpenAIAdapter{}).BuildRequest(&req, ep, call, mapped); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if got := string(req.Body()); got != strings.Replace(chatBody, `"gpt-x"`, `"gpt-x-2024-08-06"`, 1) {
		t.Fatalf("rewritten body %s", got)
	}
	if allocs := testing.AllocsPerRun(1000, run); allocs != 0 {
		t.Fatalf("BuildRequest with model_map allocates %v per run", allocs)
	}
}
