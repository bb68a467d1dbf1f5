package provider

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

// Translated streams of several tenants at once, through the same pools:
// each stream's decoder, client translator and buffers are reused by the
// next, so a buffer released while still referenced, or released twice,
// would put one tenant's text or model id in another's events. Each
// tenant's upstream writes only its own words; streams end cleanly, are
// cut midway (a client gone) or fail at once (the walk moving on).
func TestTranslatedStreamsKeepTenantsApart(t *testing.T) {
	const tenants, rounds = 4, 60
	for _, tc := range []struct {
		name string
		a    Adapter
		s    router.Surface
		req  string
	}{
		{"messages", openAIMessages, router.SurfaceMessages, `{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"responses", geminiResponses, router.SurfaceResponses, `{"model":"m","stream":true,"input":"hi"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, tenants)
			for g := 0; g < tenants; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- tenantStreams(tc.a, tc.s, tc.req, g, rounds)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// tenantStreams runs rounds streams of tenant g and checks that each
// carries g's model and words, and no other tenant's.
func tenantStreams(a Adapter, s router.Surface, req string, g, rounds int) error {
	own := fmt.Sprintf("tenant%d-", g)
	var sse strings.Builder
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&sse, "data: {\"id\":\"chatcmpl-%s%d\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%sword%d \"},\"finish_reason\":null}]}\n\n", own, i, own, i)
	}
	fmt.Fprintf(&sse, "data: {\"id\":\"chatcmpl-%s\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_%s\",\"type\":\"function\",\"function\":{\"name\":\"%sf\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":9,\"total_tokens\":14}}\n\ndata: [DONE]\n\n", own, own, own)
	body := []byte(sse.String())
	failing := []byte(`data: {"error":{"message":"` + own + `overloaded","type":"server_error"}}` + "\n\n")
	model := own + "model"
	for r := 0; r < rounds; r++ {
		c := &Call{Surface: s, Stream: true, Body: []byte(req), Model: []byte(model)}
		var hreq fasthttp.Request
		if err := a.BuildRequest(&hreq, &Endpoint{BaseURL: "http://x/v1"}, c, []byte("up-model")); err != nil {
			return err
		}
		in, cut := body, r%3 == 1
		if r%3 == 2 {
			in = failing
		}
		d := a.NewStream(c)
		br := bufio.NewReader(bytes.NewReader(in))
		var out []byte
		for n := 0; ; n++ {
			var err error
			out, err = d.Next(out, br)
			if err != nil || cut && n == 3 {
				break
			}
		}
		ReleaseDecoder(d)
		c.ReleaseTranslation()
		got := string(out)
		if strings.Count(got, "tenant") != strings.Count(got, own) {
			return fmt.Errorf("tenant %d's stream holds another tenant's bytes:\n%s", g, got)
		}
		if r%3 != 2 && (!strings.Contains(got, model) || !strings.Contains(got, own+"word")) {
			return fmt.Errorf("tenant %d's stream lacks its model or words:\n%s", g, got)
		}
	}
	return nil
}

// The fields of an error envelope outlive the parser that read them: the
// next parse on it (another stream's) must not change them.
func TestEnvelopeFieldsAreCopies(t *testing.T) {
	env := []byte(`{"error":{"message":"tenant A's message","type":"server_error","code":"a_code"}}`)
	other := []byte(`{"error":{"message":"tenant B's own prompt","type":"another_type","code":"b_code_xx"}}`)
	for i := 0; i < 20; i++ { // under -race the pool drops a quarter of what is put back
		msg, typ, code := envelopeFields(env)
		p := parserPool.Get()
		if _, err := p.ParseBytes(other); err != nil {
			t.Fatal(err)
		}
		parserPool.Put(p)
		if msg != "tenant A's message" || typ != "server_error" || code != "a_code" {
			t.Fatalf("after another parse the fields read %q %q %q", msg, typ, code)
		}
	}
}
