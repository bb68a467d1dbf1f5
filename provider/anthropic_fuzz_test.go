package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

// Fuzz targets for both translating adapters: whatever the client sends or
// the provider answers, the result is an error or valid JSON, never a
// panic or a hang. go test runs the seed corpus (every golden input).

func addGoldenSeeds(f *testing.F, field string) {
	files, _ := filepath.Glob("testdata/*/*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) == nil && len(m[field]) > 0 {
			f.Add([]byte(m[field]))
		}
	}
}

var fuzzAdapters = []Adapter{newAnthropicAdapter(), newBedrockAdapter()}

func FuzzTranslateRequest(f *testing.F) {
	addGoldenSeeds(f, "openai")
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"\u0000\ud800"}]}],"stop":[""],"max_tokens":1e3}`))
	ep := &Endpoint{BaseURL: "http://127.0.0.1:1", APIKey: "k", Region: "us-east-1"}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, a := range fuzzAdapters {
			for _, stream := range []bool{false, true} {
				req := fasthttp.AcquireRequest()
				err := a.BuildRequest(req, ep, &Call{Surface: router.SurfaceChat, Stream: stream, Body: body, Model: []byte("m")}, []byte("a:b/c"))
				if err == nil && !json.Valid(req.Body()) {
					t.Fatalf("%T built invalid JSON from %q: %s", a, body, req.Body())
				}
				fasthttp.ReleaseRequest(req)
			}
		}
	})
}

func FuzzTranslateResponse(f *testing.F) {
	addGoldenSeeds(f, "anthropic")
	addGoldenSeeds(f, "bedrock")
	f.Add([]byte(`{"content":[{"type":"tool_use","input":"x"}],"output":{"message":{"content":[{"toolUse":{"input":[1]}}]}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, a := range fuzzAdapters {
			out, err := a.TranslateResponse(nil, body, &Call{Model: []byte("m\x00\"")})
			if err == nil && !json.Valid(out) {
				t.Fatalf("%T produced invalid JSON from %q: %s", a, body, out)
			}
		}
	})
}

func FuzzAnthropicStream(f *testing.F) {
	addGoldenSeeds(f, "sse")
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":99999,\"content_block\":{\"type\":\"tool_use\"}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":-1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"x\"}}\n\n"))
	f.Fuzz(func(t *testing.T, input []byte) {
		if len(input) > 0 && input[0] == '"' { // seeds are JSON strings
			var s string
			if json.Unmarshal(input, &s) == nil {
				input = []byte(s)
			}
		}
		checkStreamTerminates(t, newAnthropicAdapter(), input)
	})
}

func FuzzBedrockStream(f *testing.F) {
	var g streamGolden
	loadGolden(f, "testdata/bedrock/stream_tool_use.json", &g)
	f.Add(encodeEvents(f, g.Events))
	f.Add(encodeEvents(f, []json.RawMessage{json.RawMessage(`{"headers":{":message-type":"exception",":exception-type":"x"},"payload":{"message":1}}`)}))
	f.Fuzz(func(t *testing.T, input []byte) {
		checkStreamTerminates(t, newBedrockAdapter(), input)
	})
}

// checkStreamTerminates runs a decoder over input: it must end (EOF or an
// error) within a bounded number of calls, and every frame must be a valid
// data frame.
func checkStreamTerminates(t *testing.T, a Adapter, input []byte) {
	dec := a.NewStream(&Call{Surface: router.SurfaceChat, Stream: true, Model: []byte("m"),
		Body: []byte(`{"stream_options":{"include_usage":true}}`)})
	r := bufio.NewReaderSize(bytes.NewReader(input), 16)
	for i := 0; i <= len(input)+2; i++ {
		out, err := dec.Next(nil, r)
		for len(out) > 0 {
			end := bytes.Index(out, []byte("\n\n"))
			if !bytes.HasPrefix(out, []byte("data: ")) || end < 0 {
				t.Fatalf("bad frame %q", out)
			}
			if p := out[6:end]; string(p) != "[DONE]" && !json.Valid(p) {
				t.Fatalf("invalid JSON frame %q", p)
			}
			out = out[end+2:]
		}
		if err != nil {
			return
		}
	}
	t.Fatalf("decoder did not end on %q", input)
}
