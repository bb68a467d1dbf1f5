package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
)

// Golden files under testdata/{anthropic,bedrock} were written from the
// providers' published API references; JSON is compared semantically.

type requestGolden struct {
	Stream        bool            `json:"stream"`
	UpstreamModel string          `json:"upstream_model"`
	Path          string          `json:"path"` // bedrock: request URI on the wire
	OpenAI        json.RawMessage `json:"openai"`
	Anthropic     json.RawMessage `json:"anthropic"`
	Bedrock       json.RawMessage `json:"bedrock"`
}

type responseGolden struct {
	VisibleModel string          `json:"visible_model"`
	Anthropic    json.RawMessage `json:"anthropic"`
	Bedrock      json.RawMessage `json:"bedrock"`
	OpenAI       json.RawMessage `json:"openai"`
}

type errorGolden struct {
	Cases []struct {
		Status   int               `json:"status"`
		Headers  map[string]string `json:"headers"`
		Body     string            `json:"body"`
		Class    string            `json:"class"`
		Envelope json.RawMessage   `json:"envelope"`
	} `json:"cases"`
}

func goldenFiles(t *testing.T, dir, prefix string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, prefix+"*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files %s/%s*.json: %v", dir, prefix, err)
	}
	return files
}

func loadGolden(t testing.TB, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// decodeJSON decodes b, failing the test on invalid JSON.
func decodeJSON(t *testing.T, what string, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s is not valid JSON: %v\n%s", what, err, b)
	}
	return v
}

func pretty(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func jsonEqual(t *testing.T, what string, got []byte, want json.RawMessage) {
	t.Helper()
	g, w := decodeJSON(t, what, got), decodeJSON(t, what+" (want)", want)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s mismatch\ngot:  %s\nwant: %s", what, pretty(g), pretty(w))
	}
}

// normalizeOpenAI checks the fields that cannot be golden (created: a
// recent unix time; a generated id: chatcmpl-…, the same in every chunk of
// a stream) and replaces them so the rest compares exactly.
func normalizeOpenAI(t *testing.T, v any, generatedID *string) any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("not an object: %v", v)
	}
	created, ok := m["created"].(float64)
	now := float64(time.Now().Unix())
	if !ok || created < now-3600 || created > now+5 {
		t.Errorf("created = %v, want the current unix time", m["created"])
	}
	delete(m, "created")
	if generatedID != nil {
		id, _ := m["id"].(string)
		if !strings.HasPrefix(id, "chatcmpl-") || len(id) < 12 {
			t.Errorf("id = %q, want a generated chatcmpl- id", id)
		}
		if *generatedID == "" {
			*generatedID = id
		} else if id != *generatedID {
			t.Errorf("id changed within a stream: %q then %q", *generatedID, id)
		}
		m["id"] = "GENERATED"
	}
	return m
}

func testRequestGoldens(t *testing.T, a Adapter, dir string, ep *Endpoint, checkReq func(t *testing.T, g requestGolden, req *fasthttp.Request)) {
	for _, f := range goldenFiles(t, dir, "request_") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var g requestGolden
			loadGolden(t, f, &g)
			c := &Call{Surface: router.SurfaceChat, Stream: g.Stream, Body: g.OpenAI, Model: []byte("visible")}
			req := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(req)
			if err := a.BuildRequest(req, ep, c, []byte(g.UpstreamModel)); err != nil {
				t.Fatalf("BuildRequest: %v", err)
			}
			want := g.Anthropic
			if dir == "bedrock" {
				want = g.Bedrock
			}
			jsonEqual(t, "request body", req.Body(), want)
			if string(req.Header.Method()) != "POST" || string(req.Header.ContentType()) != "application/json" {
				t.Errorf("method %q content type %q", req.Header.Method(), req.Header.ContentType())
			}
			checkReq(t, g, req)
		})
	}
}

func testResponseGoldens(t *testing.T, a Adapter, dir string, generatedID bool) {
	for _, f := range goldenFiles(t, dir, "response_") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var g responseGolden
			loadGolden(t, f, &g)
			in := g.Anthropic
			if dir == "bedrock" {
				in = g.Bedrock
			}
			c := &Call{Surface: router.SurfaceChat, Model: []byte(g.VisibleModel), Body: []byte(`{}`)}
			prefix := []byte("kept:")
			got, err := a.TranslateResponse(prefix, in, c)
			if err != nil {
				t.Fatalf("TranslateResponse: %v", err)
			}
			if !bytes.HasPrefix(got, prefix) {
				t.Fatalf("dst prefix not kept: %q", got)
			}
			var id string
			idp := &id
			if !generatedID {
				idp = nil
			}
			norm := normalizeOpenAI(t, decodeJSON(t, "response", got[len(prefix):]), idp)
			if w := decodeJSON(t, "want", g.OpenAI); !reflect.DeepEqual(norm, normalizeWant(w, generatedID)) {
				t.Errorf("response mismatch\ngot:  %s\nwant: %s", pretty(norm), pretty(w))
			}
		})
	}
}

func normalizeWant(v any, generatedID bool) any {
	if m, ok := v.(map[string]any); ok && generatedID {
		m["id"] = "GENERATED"
	}
	return v
}

type streamGolden struct {
	IncludeUsage bool              `json:"include_usage"`
	VisibleModel string            `json:"visible_model"`
	SSE          string            `json:"sse"`
	Events       []json.RawMessage `json:"events"`
	Calls        [][]any           `json:"calls"`
	End          json.RawMessage   `json:"end"`
}

// splitFrames checks that out is a sequence of "data: …\n\n" frames and
// returns their payloads ("[DONE]" or decoded JSON).
func splitFrames(t *testing.T, out []byte) []any {
	t.Helper()
	var frames []any
	for len(out) > 0 {
		i := bytes.Index(out, []byte("\n\n"))
		if !bytes.HasPrefix(out, []byte("data: ")) || i < 0 {
			t.Fatalf("not an SSE data frame: %q", out)
		}
		payload := out[len("data: "):i]
		if bytes.IndexByte(payload, '\n') >= 0 {
			t.Fatalf("frame payload spans lines: %q", payload)
		}
		if string(payload) == "[DONE]" {
			frames = append(frames, "[DONE]")
		} else {
			frames = append(frames, decodeJSON(t, "frame", payload))
		}
		out = out[i+2:]
	}
	return frames
}

// runStreamGolden feeds input through a fresh decoder and checks what each
// Next call returns, then the end of the stream.
func runStreamGolden(t *testing.T, a Adapter, g streamGolden, input []byte, bufSize int, generatedID bool) {
	t.Helper()
	body := `{"model":"m","stream":true,"messages":[]}`
	if g.IncludeUsage {
		body = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
	}
	c := &Call{Surface: router.SurfaceChat, Stream: true, Model: []byte(g.VisibleModel), Body: []byte(body)}
	dec := a.NewStream(c)
	r := bufio.NewReaderSize(bytes.NewReader(input), bufSize)
	var id string
	idp := &id
	if !generatedID {
		idp = nil
	}
	var err error
	var out []byte
	for i := 0; ; i++ {
		out, err = dec.Next(out[:0], r)
		if err != nil && len(out) == 0 {
			if i != len(g.Calls) {
				t.Fatalf("stream ended after %d calls, want %d: %v", i, len(g.Calls), err)
			}
			break
		}
		if i >= len(g.Calls) {
			t.Fatalf("call %d returned %q, want the end", i, out)
		}
		got := splitFrames(t, out)
		for j, f := range got {
			if f != "[DONE]" {
				got[j] = normalizeOpenAI(t, f, idp)
			}
		}
		want := g.Calls[i]
		for _, f := range want {
			normalizeWant(f, generatedID)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d:\ngot:  %s\nwant: %s", i, pretty(got), pretty(want))
		}
		if err != nil {
			if i != len(g.Calls)-1 {
				t.Fatalf("call %d ended the stream early: %v", i, err)
			}
			break
		}
	}
	if string(g.End) == `"eof"` {
		if err != io.EOF {
			t.Fatalf("end: %v, want io.EOF", err)
		}
		// The decoder stays ended.
		if out, err := dec.Next(nil, r); err != io.EOF || len(out) != 0 {
			t.Fatalf("Next after the end: %q, %v", out, err)
		}
		return
	}
	var want struct {
		Class    string          `json:"class"`
		Status   int             `json:"status"`
		Envelope json.RawMessage `json:"envelope"`
	}
	if e := json.Unmarshal(g.End, &want); e != nil {
		t.Fatal(e)
	}
	var se *StreamError
	if !errors.As(err, &se) {
		t.Fatalf("end: %v, want a *StreamError", err)
	}
	if se.Class.String() != want.Class || se.Status != want.Status {
		t.Errorf("StreamError class %v status %d, want %s %d", se.Class, se.Status, want.Class, want.Status)
	}
	jsonEqual(t, "stream error envelope", se.Body, want.Envelope)
}

func testErrorGoldens(t *testing.T, a Adapter, dir string) {
	var g errorGolden
	loadGolden(t, filepath.Join("testdata", dir, "errors.json"), &g)
	if len(g.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, tc := range g.Cases {
		var h fasthttp.ResponseHeader
		h.SetStatusCode(tc.Status)
		for k, v := range tc.Headers {
			h.Set(k, v)
		}
		cl, env := a.ClassifyError(tc.Status, &h, []byte(tc.Body))
		if cl.String() != tc.Class {
			t.Errorf("%d %s: class %v, want %s", tc.Status, tc.Body, cl, tc.Class)
		}
		jsonEqual(t, "envelope of "+tc.Body, env, tc.Envelope)
	}
}

func TestAnthropicRequestGolden(t *testing.T) {
	ep := &Endpoint{BaseURL: "https://api.anthropic.com", APIKey: "sk-ant-test"}
	testRequestGoldens(t, newAnthropicAdapter(), "anthropic", ep, func(t *testing.T, g requestGolden, req *fasthttp.Request) {
		if got := req.URI().String(); got != "https://api.anthropic.com/v1/messages" {
			t.Errorf("URI %s", got)
		}
		if got := string(req.Header.Peek("x-api-key")); got != "sk-ant-test" {
			t.Errorf("x-api-key %q", got)
		}
		if got := string(req.Header.Peek("anthropic-version")); got != "2023-06-01" {
			t.Errorf("anthropic-version %q", got)
		}
		if len(req.Header.Peek("Authorization")) != 0 {
			t.Error("Authorization header sent to anthropic")
		}
	})
}

// buildHi builds a one-message chat request for ep with a, failing the
// test if the adapter refuses it.
func buildHi(t *testing.T, a Adapter, ep *Endpoint) *fasthttp.Request {
	t.Helper()
	req := fasthttp.AcquireRequest()
	t.Cleanup(func() { fasthttp.ReleaseRequest(req) })
	c := &Call{Surface: router.SurfaceChat, Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)}
	if err := a.BuildRequest(req, ep, c, []byte("m")); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestAnthropicNoKeyNoHeader(t *testing.T) {
	req := buildHi(t, newAnthropicAdapter(), &Endpoint{BaseURL: "http://127.0.0.1:1"})
	if req.Header.Peek("x-api-key") != nil {
		t.Errorf("x-api-key sent without a key: %q", req.Header.Peek("x-api-key"))
	}
}

func TestAnthropicResponseGolden(t *testing.T) {
	testResponseGoldens(t, newAnthropicAdapter(), "anthropic", false)
}

func TestAnthropicStreamGolden(t *testing.T) {
	for _, f := range goldenFiles(t, "anthropic", "stream_") {
		var g streamGolden
		loadGolden(t, f, &g)
		// 16 bytes forces every line through the long-line path.
		for _, size := range []int{4096, 16} {
			t.Run(filepath.Base(f)+"/buf"+strconv.Itoa(size), func(t *testing.T) {
				runStreamGolden(t, newAnthropicAdapter(), g, []byte(g.SSE), size, false)
			})
		}
	}
}

func TestAnthropicErrorGolden(t *testing.T) {
	testErrorGoldens(t, newAnthropicAdapter(), "anthropic")
}

// A stream must be translated event by event: the first frame is available
// while the upstream has sent nothing more. The role chunk of message_start
// is held back (ping carries nothing either) and leaves with the first text.
func TestAnthropicStreamDoesNotBuffer(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() {
		pw.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"usage\":{\"input_tokens\":1}}}\n\n"))
		pw.Write([]byte("event: ping\ndata: {\"type\": \"ping\"}\n\n"))
		pw.Write([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"A\"}}\n\n"))
		// The writer blocks here until the test has read the first frame.
		pw.Write([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"B\"}}\n\n"))
	}()
	dec := newAnthropicAdapter().NewStream(&Call{Surface: router.SurfaceChat, Stream: true, Model: []byte("v"), Body: []byte(`{}`)})
	r := bufio.NewReader(pr)
	out, err := dec.Next(nil, r)
	role, a := bytes.Index(out, []byte(`"role":"assistant"`)), bytes.Index(out, []byte(`"content":"A"`))
	if err != nil || role < 0 || a < role || bytes.Count(out, []byte("data: ")) != 2 {
		t.Fatalf("first Next: %q, %v; want the role chunk, then A", out, err)
	}
	out, err = dec.Next(nil, r)
	if err != nil || !bytes.Contains(out, []byte(`"content":"B"`)) || bytes.Contains(out, []byte(`"role"`)) {
		t.Fatalf("second Next: %q, %v", out, err)
	}
}

func TestAnthropicBadRequests(t *testing.T) {
	bad := []string{
		`not json`,
		`[]`,
		`{"model":"m"}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x"}}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain,hi"}}]}]}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{bad"}}]}]}`,
		`{"model":"m","messages":[{"role":"tool","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"wizard","content":"x"}]}`,
		`{"model":"m","messages":[],"max_tokens":0}`,
		`{"model":"m","messages":[],"max_tokens":"5"}`,
		`{"model":"m","messages":[],"temperature":"hot"}`,
		`{"model":"m","messages":[],"stop":[1]}`,
		`{"model":"m","messages":[],"n":2}`,
		`{"model":"m","messages":[],"tools":[{"type":"web_search"}]}`,
		`{"model":"m","messages":[],"tools":[{"type":"function","function":{}}]}`,
		`{"model":"m","messages":[],"tool_choice":"maybe"}`,
		`{"model":"m","messages":[],"user":5}`,
	}
	for _, a := range []Adapter{newAnthropicAdapter(), newBedrockAdapter()} {
		for _, b := range bad {
			req := fasthttp.AcquireRequest()
			err := a.BuildRequest(req, &Endpoint{BaseURL: "http://127.0.0.1:1"}, &Call{Surface: router.SurfaceChat, Body: []byte(b)}, []byte("m"))
			fasthttp.ReleaseRequest(req)
			var re *RequestError
			if !errors.As(err, &re) || re.Message == "" {
				t.Errorf("%T %s: err %v, want a *RequestError", a, b, err)
			}
		}
		err := a.BuildRequest(fasthttp.AcquireRequest(), &Endpoint{}, &Call{Surface: router.SurfaceEmbeddings, Body: []byte(`{}`)}, []byte("m"))
		if err == nil {
			t.Errorf("%T accepted the embeddings surface", a)
		}
		// Chat natively; messages and responses too, natively or translated.
		if want := router.SurfaceSet(1 << router.SurfaceChat); a.Surfaces()&^(1<<router.SurfaceMessages|TranslatedSurfaces()) != want {
			t.Errorf("%T surfaces %b", a, a.Surfaces())
		}
	}
}

func TestAnthropicMalformedAnswers(t *testing.T) {
	a := newAnthropicAdapter()
	if _, err := a.TranslateResponse(nil, []byte(`<html>`), &Call{}); err == nil {
		t.Error("malformed 2xx body accepted")
	}
	dec := a.NewStream(&Call{Body: []byte(`{}`)})
	_, err := dec.Next(nil, bufio.NewReader(strings.NewReader("data: {not json\n\n")))
	var se *StreamError
	if !errors.As(err, &se) || se.Class != ClassTransport {
		t.Errorf("malformed event: %v", err)
	}
}

// The role chunk of message_start is held back until the first frame with
// content, so that an error before any content reaches the walk from the
// first Next with no frame (before the commit: failover-safe, docs/routing.md, 6).
// Events without content (ping, an empty text block) keep it held; dst's
// earlier bytes are never touched.
func TestAnthropicStreamHoldsRoleUntilContent(t *testing.T) {
	const (
		start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"usage\":{\"input_tokens\":1}}}\n\n"
		ping  = "event: ping\ndata: {\"type\":\"ping\"}\n\n"
		block = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		text  = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
		tool  = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{}}}\n\n"
		delta = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":0}}\n\n"
		stop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	)
	errEvent := func(typ string) string {
		return "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"" + typ + "\",\"message\":\"m\"}}\n\n"
	}
	for _, tc := range []struct {
		name   string
		sse    string
		class  Class // for an error: its class from the first Next
		status int
		with   string // else: what the first frame after the role chunk holds
		eof    bool
	}{
		{"overloaded after start", start + errEvent("overloaded_error"), ClassServer, 529, "", false},
		{"overloaded after ping and empty block", start + ping + block + ping + errEvent("overloaded_error"), ClassServer, 529, "", false},
		{"rate limit after start", start + errEvent("rate_limit_error"), ClassRateLimited, 429, "", false},
		{"api error after start", start + ping + errEvent("api_error"), ClassServer, 500, "", false},
		{"truncated after start", start + ping, ClassTransport, 0, "", false},
		{"text", start + ping + block + text, 0, 0, `"content":"Hi"`, false},
		{"tool_use", start + tool, 0, 0, `"name":"f"`, false},
		{"stop reason", start + delta, 0, 0, `"finish_reason":"stop"`, false},
		{"end", start + stop, 0, 0, "data: [DONE]\n\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := newAnthropicAdapter().NewStream(&Call{Surface: router.SurfaceChat, Stream: true, Model: []byte("v"), Body: []byte(`{}`)})
			checkHeldRole(t, dec, bufio.NewReader(strings.NewReader(tc.sse)), tc.class, tc.status, tc.with, tc.eof)
		})
	}
}

// checkHeldRole runs a stream's first Next, on dst that already holds a
// frame, and checks the held role chunk: with with == "", the first Next
// returns a *StreamError of class (and status, if not 0) and appends
// nothing; else it appends exactly one role chunk followed by with, and
// returns io.EOF exactly when wantEOF.
func checkHeldRole(t *testing.T, dec StreamDecoder, r *bufio.Reader, class Class, status int, with string, wantEOF bool) {
	t.Helper()
	prefix := []byte("data: earlier\n\n")
	out, err := dec.Next(append([]byte(nil), prefix...), r)
	if !bytes.HasPrefix(out, prefix) {
		t.Fatalf("dst's earlier bytes changed: %q", out)
	}
	got := out[len(prefix):]
	if with == "" {
		var se *StreamError
		if !errors.As(err, &se) || se.Class != class || (status != 0 && se.Status != status) {
			t.Fatalf("first Next: %v, want a %v *StreamError (status %d)", err, class, status)
		}
		if len(got) != 0 {
			t.Fatalf("first Next appended %q with the error, want nothing", got)
		}
		return
	}
	if wantEOF != (err == io.EOF) || (!wantEOF && err != nil) {
		t.Fatalf("first Next: %v", err)
	}
	role := bytes.Index(got, []byte(`"role":"assistant"`))
	if role < 0 || bytes.Count(got, []byte(`"role"`)) != 1 || bytes.Index(got, []byte(with)) < role {
		t.Fatalf("first Next: %q, want one role chunk, then %s", got, with)
	}
}
