//go:build !race

package provider

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

// A translated stream allocates nothing per stream once its pools are
// warm, as the chat stream it translates: the translated decoder, the
// client API's stream translator and their buffers are all reused.
func TestTranslatedStreamAllocs(t *testing.T) {
	var sse strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&sse, "data: {\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word %d \"},\"finish_reason\":null}]}\n\n", i)
	}
	sse.WriteString("data: {\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":20,\"total_tokens\":25}}\n\ndata: [DONE]\n\n")
	body := []byte(sse.String())
	for _, tc := range []struct {
		name string
		a    Adapter
		s    router.Surface
		req  string
	}{
		{"chat", OpenAIAdapter{}, router.SurfaceChat, `{"model":"m","stream":true,"messages":[{"role":"user","content":"Say hello"}]}`},
		{"messages over openai", openAIMessages, router.SurfaceMessages, `{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"Say hello"}]}`},
		{"responses over gemini", geminiResponses, router.SurfaceResponses, `{"model":"m","stream":true,"input":"Say hello"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The walk builds the request first: a translated adapter
			// keeps the chat call its stream decoder reads.
			c := &Call{Surface: tc.s, Stream: true, Body: []byte(tc.req), Model: []byte("client-model")}
			var req fasthttp.Request
			if err := tc.a.BuildRequest(&req, &Endpoint{BaseURL: "http://x/v1"}, c, []byte("up-model")); err != nil {
				t.Fatal(err)
			}
			defer c.ReleaseTranslation()
			src := bytes.NewReader(nil)
			br := bufio.NewReader(nil)
			dst := make([]byte, 0, 4096)
			run := func() {
				src.Reset(body)
				br.Reset(src)
				d := tc.a.NewStream(c)
				for {
					var err error
					if dst, err = d.Next(dst[:0], br); err == io.EOF {
						break
					} else if err != nil {
						t.Fatal(err)
					}
				}
				ReleaseDecoder(d)
			}
			run()
			if n := testing.AllocsPerRun(100, run); n != 0 {
				t.Fatalf("%v allocations per stream", n)
			}
		})
	}
}

// The response id of a stream is read with a pooled parser: its copy is
// the one allocation.
func TestCreatedResponseIDAllocs(t *testing.T) {
	frame := []byte("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_abc\",\"object\":\"response\",\"created_at\":1,\"status\":\"in_progress\",\"output\":[],\"usage\":null,\"metadata\":{}}}\n\n")
	CreatedResponseID(frame)
	if n := testing.AllocsPerRun(100, func() { CreatedResponseID(frame) }); n != 1 {
		t.Fatalf("%v allocations, want 1 (the id's copy)", n)
	}
}
