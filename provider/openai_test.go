package provider

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

func TestRewriteModelByteExact(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"model":"a","x":1}`, `{"model":"b-2024","x":1}`},
		// Whitespace, key order, nested "model" keys and a "model" string
		// inside content are all kept.
		{"{ \"messages\" : [{\"role\":\"user\",\"content\":\"\\\"model\\\":\\\"a\\\"\",\"model\":\"a\"}],\n\t\"model\" :\t\"a\" , \"metadata\":{\"model\":\"a\"},\"n\":-1.5e3,\"t\":true,\"z\":null}",
			"{ \"messages\" : [{\"role\":\"user\",\"content\":\"\\\"model\\\":\\\"a\\\"\",\"model\":\"a\"}],\n\t\"model\" :\t\"b-2024\" , \"metadata\":{\"model\":\"a\"},\"n\":-1.5e3,\"t\":true,\"z\":null}"},
		{`{"tools":[{"function":{"name":"model","parameters":{"model":{"type":"string"}}}}],"model":"a"}`,
			`{"tools":[{"function":{"name":"model","parameters":{"model":{"type":"string"}}}}],"model":"b-2024"}`},
		// An escaped key still names model; a non-ASCII body survives.
		{`{"mod\u0065l":"a","prompt":"héllo ✓"}`, `{"mod\u0065l":"b-2024","prompt":"héllo ✓"}`},
		// Duplicate top-level keys: every one is rewritten.
		{`{"model":"a","model":"a"}`, `{"model":"b-2024","model":"b-2024"}`},
	}
	for _, c := range cases {
		got, err := RewriteModel(nil, []byte(c.in), []byte("b-2024"))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if string(got) != c.want {
			t.Errorf("RewriteModel(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestRewriteModelRejects(t *testing.T) {
	for _, in := range []string{``, `[]`, `{}`, `{"model":1}`, `{"x":{"model":"a"}}`, `{"model":"a"`, `{"model" "a"}`, `"model"`} {
		if got, err := RewriteModel(nil, []byte(in), []byte("b")); err == nil {
			t.Errorf("RewriteModel(%q) = %q, want an error", in, got)
		}
	}
}

func TestOpenAIBuildRequest(t *testing.T) {
	ep := &Endpoint{BaseURL: "https://api.example.com/v1", APIKey: "sk-target"}
	paths := map[router.Surface]string{
		router.SurfaceChat:        "/v1/chat/completions",
		router.SurfaceCompletions: "/v1/completions",
		router.SurfaceEmbeddings:  "/v1/embeddings",
		router.SurfaceImages:      "/v1/images/generations",
	}
	for s, path := range paths {
		var req fasthttp.Request
		body := []byte(`{"model":"m","input":"x"}`)
		c := &Call{Surface: s, Body: body, Model: []byte("m")}
		if err := (OpenAIAdapter{}).BuildRequest(&req, ep, c, []byte("m")); err != nil {
			t.Fatal(err)
		}
		if got := string(req.URI().FullURI()); got != "https://api.example.com"+path {
			t.Errorf("%v: URI %s", s, got)
		}
		if string(req.Header.Method()) != "POST" || string(req.Header.ContentType()) != "application/json" {
			t.Errorf("%v: method %s content type %s", s, req.Header.Method(), req.Header.ContentType())
		}
		if got := string(req.Header.Peek("Authorization")); got != "Bearer sk-target" {
			t.Errorf("%v: Authorization %q", s, got)
		}
		if string(req.Body()) != string(body) {
			t.Errorf("%v: body %s", s, req.Body())
		}
	}
	// No key: no Authorization at all.
	var req fasthttp.Request
	c := &Call{Surface: router.SurfaceChat, Body: []byte(`{"model":"m"}`), Model: []byte("m")}
	if err := (OpenAIAdapter{}).BuildRequest(&req, &Endpoint{BaseURL: "http://h"}, c, []byte("mapped")); err != nil {
		t.Fatal(err)
	}
	if req.Header.Peek("Authorization") != nil {
		t.Errorf("Authorization sent without an api_key: %q", req.Header.Peek("Authorization"))
	}
	if string(req.Body()) != `{"model":"mapped"}` {
		t.Errorf("mapped body %s", req.Body())
	}
}

func TestOpenAIClassifyError(t *testing.T) {
	shaped := `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":"x"}}`
	ctx := `{"error":{"message":"too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	cases := []struct {
		status   int
		body     string
		class    Class
		passBody bool
	}{
		{500, shaped, ClassServer, true},
		{503, "upstream connect error", ClassServer, false},
		{408, "", ClassServer, false},
		{429, shaped, ClassRateLimited, true},
		{401, shaped, ClassAuth, true},
		{403, "<html>forbidden</html>", ClassAuth, false},
		{400, ctx, ClassContextLength, true},
		{400, shaped, ClassClient, true},
		{404, shaped, ClassClient, true},
		{422, `{"detail":"unprocessable"}`, ClassClient, false},
		{413, `{"error":"too big"}`, ClassClient, false},
		{413, `{"error":{"code":"context_length_exceeded"}}`, ClassClient, true}, // only a 400 is an overflow
		{302, "", ClassTransport, false},
	}
	for _, c := range cases {
		class, env := (OpenAIAdapter{}).ClassifyError(c.status, nil, []byte(c.body))
		if class != c.class {
			t.Errorf("%d %s: class %v, want %v", c.status, c.body, class, c.class)
		}
		if c.passBody && string(env) != c.body {
			t.Errorf("%d: OpenAI-shaped body not passed through: %s", c.status, env)
		}
		if !c.passBody && !strings.HasPrefix(string(env), `{"error":{"message":`) {
			t.Errorf("%d %s: synthesized envelope %s", c.status, c.body, env)
		}
	}
	_, env := (OpenAIAdapter{}).ClassifyError(413, nil, []byte(`{"error":"too big"}`))
	if !strings.Contains(string(env), `"message":"too big"`) || !strings.Contains(string(env), `"code":"invalid_request"`) {
		t.Errorf("string error not carried into envelope: %s", env)
	}
}

// readAll drives a decoder to its end and returns the frames and the final
// error.
func readAll(t *testing.T, d StreamDecoder, in string, bufSize int) (frames []string, err error) {
	t.Helper()
	br := bufio.NewReaderSize(strings.NewReader(in), bufSize)
	for i := 0; i < 1000; i++ {
		var f []byte
		f, err = d.Next(nil, br)
		if len(f) > 0 {
			frames = append(frames, string(f))
		}
		if err != nil {
			return frames, err
		}
	}
	t.Fatal("decoder did not end")
	return nil, nil
}

func TestSSEPassThroughByteExact(t *testing.T) {
	long := strings.Repeat("x", 100)
	in := "data: {\"id\":1}\n\n" +
		": keep-alive\n\n" +
		"event: message\r\ndata: {\"c\":\"" + long + "\"}\r\n\r\n" +
		"data:{\"a\":1}\ndata: {\"b\":2}\n\n" +
		"data: {\"content\":\"the word error appears\",\"x\":\"\\\"error\\\"\"}\n\n" +
		"data: [DONE]\n\n" +
		"data: {\"after\":true}\n\n"
	frames, err := readAll(t, &SSEDecoder{}, in, 16) // a 16-byte buffer splits lines
	if err != io.EOF {
		t.Fatalf("end error %v, want io.EOF", err)
	}
	want := []string{
		"data: {\"id\":1}\n\n",
		"event: message\r\ndata: {\"c\":\"" + long + "\"}\r\n\r\n",
		"data:{\"a\":1}\ndata: {\"b\":2}\n\n",
		"data: {\"content\":\"the word error appears\",\"x\":\"\\\"error\\\"\"}\n\n",
		"data: [DONE]\n\n",
	}
	if strings.Join(frames, "|") != strings.Join(want, "|") {
		t.Fatalf("frames\n got %q\nwant %q", frames, want)
	}
}

func TestSSEErrorEventAndEarlyEOF(t *testing.T) {
	frames, err := readAll(t, &SSEDecoder{}, "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":null}}\n\n", 4096)
	var se *StreamError
	if !errors.As(err, &se) || se.Class != ClassServer || len(frames) != 0 {
		t.Fatalf("error event: frames %q err %v", frames, err)
	}
	if string(se.Body) != `{"error":{"message":"overloaded","type":"server_error","code":null}}` {
		t.Fatalf("error body %s", se.Body)
	}
	_, err = readAll(t, &SSEDecoder{}, "data: {\"error\":{\"message\":\"slow down\",\"code\":\"rate_limit_exceeded\"}}\n\n", 4096)
	if !errors.As(err, &se) || se.Class != ClassRateLimited || se.Status != 429 {
		t.Fatalf("rate-limit event: %v", err)
	}
	_, err = readAll(t, &SSEDecoder{}, "data: {\"error\":{\"message\":\"x\",\"code\":400}}\n\n", 4096)
	if !errors.As(err, &se) || se.Class != ClassClient || se.Status != 400 {
		t.Fatalf("400 event: %v", err)
	}
	frames, err = readAll(t, &SSEDecoder{}, "data: {\"id\":1}\n\ndata: {\"id\":2}\n\ndata: {\"id\":3", 4096)
	if !errors.As(err, &se) || se.Class != ClassTransport || len(frames) != 2 {
		t.Fatalf("EOF before [DONE]: frames %q err %v", frames, err)
	}
}

// An upstream event that never ends (no blank line, or no newline at all)
// is cut at maxSSEEvent as a transport failure instead of growing one frame
// buffer without bound.
func TestSSEOversizedEventIsATransportFailure(t *testing.T) {
	for name, in := range map[string]string{
		"no newline":    "data: {\"c\":\"" + strings.Repeat("x", MaxSSEEvent+10),
		"no blank line": strings.Repeat(": keep-alive\n", MaxSSEEvent/13+10),
		"after a frame": "data: {\"id\":1}\n\ndata: " + strings.Repeat("y", MaxSSEEvent+10) + "\n\n",
	} {
		frames, err := readAll(t, &SSEDecoder{}, in, 4096)
		var se *StreamError
		if !errors.As(err, &se) || se.Class != ClassTransport || !strings.Contains(string(se.Body), "exceeds") {
			t.Errorf("%s: err %v", name, err)
		}
		for _, f := range frames {
			if len(f) > 100 {
				t.Errorf("%s: an oversized frame was relayed (%d bytes)", name, len(f))
			}
		}
	}
}
